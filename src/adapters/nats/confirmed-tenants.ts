import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { outcomeSubject } from "../../app/subjects.js";

/**
 * Calls `onConfirmed` with the tenant of every `CommandOutcome` any instance publishes
 * (`{prefix}.outcomes.*`): on a shared store, another instance's confirmed command is news to this
 * one's shared `stats` answers. Outcomes exist only for commands sent with `Timer-Confirm: 1`, so
 * without them this subscription receives nothing. The outcome reaches this connection before its
 * sender's next request to the same server does, so the answer is dropped before that request is served.
 */
export function watchConfirmedTenants(connection: NatsConnection, prefix: string, onConfirmed: (tenantId: string) => void): Subscription {
  const start = outcomeSubject(prefix, "").length;
  return connection.subscribe(outcomeSubject(prefix, "*"), { callback: (_error, msg) => onConfirmed(msg.subject.slice(start)) });
}
