import { createInbox, headers, type Msg, type NatsConnection } from "@nats-io/transport-node";
import type { TraceHeaders } from "../../app/timer-tracing.js";
import { PeriodicLoop } from "../../app/periodic-loop.js";
import { systemClock } from "../clock/system-clock.js";

/** The stream refused a publish, or no ack came in time. */
export class JetStreamPublishError extends Error {
  override readonly name = "JetStreamPublishError";
}

interface PendingAck {
  readonly stream: string;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
  readonly deadline: number;
}

const SWEEP_INTERVAL_MS = 250;

/**
 * JetStream publishing with asynchronous acks: each message goes out as a core publish whose reply
 * subject is a token under one inbox of ours, and the stream's ack resolves the matching promise.
 * Compared with a request per message this saves a subscription lookup and a timer per event, which
 * is most of the CPU when thousands of timers fire at once; one sweep handles all time-outs.
 */
export class JetStreamAckTracker {
  private readonly inbox = createInbox();
  private readonly pending = new Map<number, PendingAck>();
  private nextId = 0;
  private readonly sweeper: PeriodicLoop;

  constructor(
    private readonly connection: NatsConnection,
    private readonly timeoutMs: number,
  ) {
    connection.subscribe(`${this.inbox}.*`, { callback: (error, message) => this.onAck(error, message) });
    this.sweeper = new PeriodicLoop(systemClock, SWEEP_INTERVAL_MS, () => this.sweep());
    this.sweeper.start();
  }

  /**
   * Publishes and resolves when the stream `streamName` acked it (a duplicate counts as acked).
   * `traceHeaders` go out with the message too (the W3C trace headers of an event).
   */
  publish(subject: string, body: Uint8Array, msgId: string, streamName: string, traceHeaders?: TraceHeaders): Promise<void> {
    const id = ++this.nextId;
    const messageHeaders = headers();
    messageHeaders.set("Nats-Msg-Id", msgId);
    if (traceHeaders !== undefined) {
      messageHeaders.set("traceparent", traceHeaders.traceparent);
      if (traceHeaders.tracestate !== undefined) messageHeaders.set("tracestate", traceHeaders.tracestate);
    }
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { stream: streamName, resolve, reject, deadline: Date.now() + this.timeoutMs });
      try {
        this.connection.publish(subject, body, { reply: `${this.inbox}.${id}`, headers: messageHeaders });
      } catch (error) {
        this.pending.delete(id);
        reject(error instanceof Error ? error : new JetStreamPublishError(String(error)));
      }
    });
  }

  close(): void {
    void this.sweeper.stop();
    this.failAll(new JetStreamPublishError("publisher closed"));
  }

  private failAll(error: Error): void {
    for (const entry of this.pending.values()) entry.reject(error);
    this.pending.clear();
  }

  private onAck(error: Error | null, message: Msg): void {
    // An error on the subscription itself (e.g. a permission violation) comes without a message.
    if (error !== null && typeof message?.subject !== "string") return this.failAll(error);
    const id = Number(message.subject.slice(this.inbox.length + 1));
    const entry = this.pending.get(id);
    if (entry === undefined) return;
    this.pending.delete(id);
    if (error !== null) return entry.reject(error);
    if (message.headers?.hasError === true) {
      return entry.reject(new JetStreamPublishError(`publish failed: ${message.headers.code} ${message.headers.description}`));
    }
    let ack: { error?: { description?: string; code?: number }; stream?: string };
    try {
      ack = message.json();
    } catch {
      return entry.reject(new JetStreamPublishError("publish ack is not JSON"));
    }
    if (ack.error !== undefined)
      return entry.reject(new JetStreamPublishError(`publish refused: ${ack.error.code} ${ack.error.description}`));
    // Checked here rather than with a Nats-Expected-Stream header: one header less per event.
    if (ack.stream !== entry.stream)
      return entry.reject(new JetStreamPublishError(`published to stream "${ack.stream}", expected "${entry.stream}"`));
    entry.resolve();
  }

  private sweep(): void {
    const now = Date.now();
    for (const [id, entry] of this.pending) {
      if (entry.deadline > now) continue;
      this.pending.delete(id);
      entry.reject(new JetStreamPublishError(`no publish ack within ${this.timeoutMs} ms`));
    }
  }
}
