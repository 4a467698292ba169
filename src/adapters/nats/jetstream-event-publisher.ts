import type { JetStreamClient } from "@nats-io/jetstream";
import { dueEventId } from "../../domain/due-time.js";
import type { Clock } from "../../app/clock.js";
import type { CommandRejected, DueTimeReached, TimerEventPublisher } from "../../app/timer-event-publisher.js";
import { commandRejectedJson, dueTimeReachedJson } from "./event-envelopes.js";

const encoder = new TextEncoder();

/**
 * Publishes events with JetStream and resolves on the stream's ack. Every event carries a
 * `Nats-Msg-Id` equal to its envelope id, so the events stream drops a republish inside its
 * duplicate window.
 */
export class JetStreamEventPublisher implements TimerEventPublisher {
  constructor(
    private readonly js: JetStreamClient,
    private readonly options: { readonly subjectPrefix: string; readonly eventsStream: string; readonly clock: Clock; readonly timeoutMs?: number },
  ) {}

  async publishDueTimeReached(event: DueTimeReached): Promise<void> {
    const body = dueTimeReachedJson(event, this.options.clock.now());
    await this.publish(`${this.options.subjectPrefix}.events.due.${event.tenantId}`, body, dueEventId(event.tenantId, event.serviceCallId, event.dueAtMs));
  }

  async publishCommandRejected(event: CommandRejected): Promise<void> {
    const body = commandRejectedJson(event, this.options.clock.now());
    await this.publish(`${this.options.subjectPrefix}.events.rejected.${event.tenant}`, body, event.id);
  }

  private async publish(subject: string, body: string, msgID: string): Promise<void> {
    await this.js.publish(subject, encoder.encode(body), {
      msgID,
      expect: { streamName: this.options.eventsStream },
      timeout: this.options.timeoutMs ?? 5_000,
    });
  }
}
