import { randomUUID } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";

/** The states a RetryTimer re-arms (CONTRACT §14). */
export const RETRYABLE_STATES = ["Failed", "TimedOut", "Missed"] as const;

export interface BulkRetry {
  readonly prefix: string;
  readonly tenantId: string;
  readonly state: string;
  readonly serviceCallIdPrefix: string | undefined;
}

/** Publishes acked in parallel at most. */
const WINDOW = 256;

/**
 * `retry --state S [--id-prefix P]`: lists the tenant's timers in S over NATS (§9 `list`, page by
 * page) and publishes a `RetryTimer` for each one with JetStream, awaiting every ack. Returns how
 * many were sent.
 */
export async function retryMatching(nc: NatsConnection, bulk: BulkRetry): Promise<number> {
  const { jetstream } = await import("@nats-io/jetstream");
  const js = jetstream(nc);
  const { prefix, tenantId, state, serviceCallIdPrefix } = bulk;
  const listSubject = `${prefix}.query.list.${tenantId}`;
  const retrySubject = `${prefix}.commands.retry.${tenantId}`;
  let cursor: string | null = null;
  let sent = 0;
  do {
    const request = {
      state,
      limit: 1000,
      ...(serviceCallIdPrefix === undefined ? {} : { serviceCallIdPrefix }),
      ...(cursor === null ? {} : { cursor }),
    };
    const reply = await nc.request(listSubject, JSON.stringify(request), { timeout: 10_000 });
    const code = reply.headers?.get("Nats-Service-Error-Code");
    if (code) throw new Error(`list failed: ${code}: ${reply.headers?.get("Nats-Service-Error") ?? ""}`);
    const page = reply.json<{ timers: { serviceCallId: string }[]; nextCursor: string | null }>();
    for (let start = 0; start < page.timers.length; start += WINDOW) {
      await Promise.all(
        page.timers.slice(start, start + WINDOW).map(({ serviceCallId }) => {
          const id = randomUUID();
          const envelope = { id, type: "RetryTimer", tenantId, timestampMs: Date.now(), payload: { tenantId, serviceCallId } };
          return js.publish(retrySubject, JSON.stringify(envelope), { msgID: id });
        }),
      );
    }
    sent += page.timers.length;
    cursor = page.nextCursor;
  } while (cursor !== null);
  return sent;
}
