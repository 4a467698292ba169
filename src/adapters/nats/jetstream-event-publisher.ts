import { dueEventId } from "../../domain/due-time.js";
import type { Clock } from "../../app/clock.js";
import type { CommandRejected, DueTimeMissed, DueTimeReached, TimerEventPublisher } from "../../app/timer-event-publisher.js";
import type { TimerTracing } from "../../app/timer-tracing.js";
import { commandRejectedJson, dueTimeMissedJson, dueTimeReachedJson } from "./event-envelopes.js";
import type { JetStreamAckTracker } from "./jetstream-ack-tracker.js";
import { eventSubject } from "../../app/subjects.js";

const encoder = new TextEncoder();

/**
 * Publishes events with JetStream and resolves on the stream's ack. Every event carries a
 * `Nats-Msg-Id` equal to its envelope id, so the events stream drops a republish inside its
 * duplicate window, and the W3C trace headers of its timer's trace (CONTRACT §13).
 */
export class JetStreamEventPublisher implements TimerEventPublisher {
  constructor(
    private readonly acks: JetStreamAckTracker,
    private readonly options: {
      readonly subjectPrefix: string;
      readonly eventsStream: string;
      readonly clock: Clock;
      readonly tracing: TimerTracing;
    },
  ) {}

  publishDueTimeReached(event: DueTimeReached): Promise<void> {
    const body = dueTimeReachedJson(event, this.options.clock.now());
    const subject = eventSubject(this.options.subjectPrefix, "due", event.tenantId);
    const id = dueEventId(event.tenantId, event.serviceCallId, event.dueAtMs, event.generation, event.attempt);
    return this.publish(event.trace, subject, body, id, event, event.reachedAtMs - event.dueAtMs);
  }

  publishDueTimeMissed(event: DueTimeMissed): Promise<void> {
    const body = dueTimeMissedJson(event, this.options.clock.now());
    const subject = eventSubject(this.options.subjectPrefix, "missed", event.tenantId);
    const id = dueEventId(event.tenantId, event.serviceCallId, event.dueAtMs, event.generation);
    return this.publish(event.trace, subject, body, id, event, event.missedAtMs - event.dueAtMs);
  }

  publishCommandRejected(event: CommandRejected): Promise<void> {
    const body = commandRejectedJson(event, this.options.clock.now());
    const subject = eventSubject(this.options.subjectPrefix, "rejected", event.tenant);
    return this.publish(event.trace, subject, body, event.id, { tenantId: event.tenant, serviceCallId: event.serviceCallId });
  }

  private publish(
    trace: DueTimeReached["trace"],
    subject: string,
    body: string,
    id: string,
    timer: { readonly tenantId: string; readonly serviceCallId?: string | undefined; readonly generation?: number },
    lateMs?: number,
  ): Promise<void> {
    // Named members, not a spread of the whole event: this object is built for every event.
    const attributes = {
      subject,
      messageId: id,
      tenantId: timer.tenantId,
      serviceCallId: timer.serviceCallId,
      generation: timer.generation,
      lateMs,
    };
    return this.options.tracing.publishEvent(trace, attributes, (headers) =>
      this.acks.publish(subject, encoder.encode(body), id, this.options.eventsStream, headers),
    );
  }
}
