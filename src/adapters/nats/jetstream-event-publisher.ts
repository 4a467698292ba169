import { dueEventId } from "../../domain/due-time.js";
import type { Clock } from "../../app/clock.js";
import type { CommandRejected, DueTimeMissed, DueTimeReached, TimerEventPublisher } from "../../app/timer-event-publisher.js";
import { commandRejectedJson, dueTimeMissedJson, dueTimeReachedJson } from "./event-envelopes.js";
import type { JetStreamAckTracker } from "./jetstream-ack-tracker.js";
import { eventSubject } from "../../app/subjects.js";

const encoder = new TextEncoder();

/**
 * Publishes events with JetStream and resolves on the stream's ack. Every event carries a
 * `Nats-Msg-Id` equal to its envelope id, so the events stream drops a republish inside its
 * duplicate window.
 */
export class JetStreamEventPublisher implements TimerEventPublisher {
  constructor(
    private readonly acks: JetStreamAckTracker,
    private readonly options: { readonly subjectPrefix: string; readonly eventsStream: string; readonly clock: Clock },
  ) {}

  publishDueTimeReached(event: DueTimeReached): Promise<void> {
    const body = dueTimeReachedJson(event, this.options.clock.now());
    const subject = eventSubject(this.options.subjectPrefix, "due", event.tenantId);
    const id = dueEventId(event.tenantId, event.serviceCallId, event.dueAtMs, event.generation, event.attempt);
    return this.acks.publish(subject, encoder.encode(body), id, this.options.eventsStream);
  }

  publishDueTimeMissed(event: DueTimeMissed): Promise<void> {
    const body = dueTimeMissedJson(event, this.options.clock.now());
    const subject = eventSubject(this.options.subjectPrefix, "missed", event.tenantId);
    return this.acks.publish(
      subject,
      encoder.encode(body),
      dueEventId(event.tenantId, event.serviceCallId, event.dueAtMs, event.generation),
      this.options.eventsStream,
    );
  }

  publishCommandRejected(event: CommandRejected): Promise<void> {
    const body = commandRejectedJson(event, this.options.clock.now());
    const subject = eventSubject(this.options.subjectPrefix, "rejected", event.tenant);
    return this.acks.publish(subject, encoder.encode(body), event.id, this.options.eventsStream);
  }
}
