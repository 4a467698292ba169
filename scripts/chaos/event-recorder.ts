import { EventStreamReader, type StreamedDueEvent } from "../../test/support/event-stream-reader.js";
import type { ObservedEvent } from "./history.js";

const STAMP_EVERY_MS = 50;

/**
 * The run's consumer: every `DueTimeReached` the events stream stored (duplicates included, read
 * from the stream itself so a broker node restart hides nothing), each with when it was read here.
 */
export class EventRecorder {
  readonly events: ObservedEvent[] = [];
  private readonly timer: NodeJS.Timeout;

  private constructor(private readonly reader: EventStreamReader) {
    this.timer = setInterval(() => this.stamp(), STAMP_EVERY_MS);
  }

  static async start(urls: readonly string[]): Promise<EventRecorder> {
    return new EventRecorder(await EventStreamReader.start(urls));
  }

  get lostTail(): number {
    return this.reader.lostTail.length;
  }

  async close(): Promise<void> {
    this.stamp();
    clearInterval(this.timer);
    await this.reader.close();
  }

  private stamp(): void {
    const receivedAtMs = Date.now();
    for (const event of this.reader.events.slice(this.events.length)) this.events.push(observed(event, receivedAtMs));
  }
}

/** The generation is the envelope id's last token (`{tenantId}:{serviceCallId}:{dueAtMs}:{generation}`). */
function observed(event: StreamedDueEvent, receivedAtMs: number): ObservedEvent {
  return {
    serviceCallId: event.serviceCallId,
    dueAtMs: event.dueAtMs,
    reachedAtMs: event.reachedAtMs,
    storedAtMs: event.storedAtMs,
    receivedAtMs,
    msgId: event.msgId,
    envelopeId: event.id,
    generation: Number(event.id.split(":").at(-1)),
    occurrence: event.occurrence,
    missedOccurrences: event.missedOccurrences,
  };
}
