import type { TraceContext } from "../domain/trace-context.js";

/** What a span of a stored command or a published event says about its timer (CONTRACT §13). */
export interface TimerSpanAttributes {
  /** The NATS subject the message came in on or goes out to. */
  readonly subject: string;
  /** The command's envelope id, or the event's id (its `Nats-Msg-Id`). */
  readonly messageId?: string | undefined;
  readonly tenantId: string;
  readonly serviceCallId?: string | undefined;
  readonly generation?: number | undefined;
  readonly lateMs?: number | undefined;
}

/** The W3C headers an event goes out with. */
export interface TraceHeaders {
  readonly traceparent: string;
  readonly tracestate?: string | undefined;
}

/** A span of one stored command, open while the command is stored. */
export interface CommandSpan {
  /** The trace the command's timer keeps: its span id the service's span of the command when spans are recorded. */
  readonly trace: TraceContext;
  end(outcome: string): void;
}

/**
 * Trace context and spans (CONTRACT §13). Every event carries a `traceparent` whatever the
 * implementation; spans are recorded only when an exporter is configured.
 */
export interface TimerTracing {
  /** A new trace, for a command without a valid `traceparent`. */
  newTrace(): TraceContext;
  /** Opens the span of a command about to be stored, as a child of the command's trace. */
  startCommand(trace: TraceContext, attributes: TimerSpanAttributes): CommandSpan;
  /**
   * Publishes one event with the headers of a span of its own in `trace` (a new trace when absent),
   * recorded as the span of the publish.
   */
  publishEvent<T>(
    trace: TraceContext | undefined,
    attributes: TimerSpanAttributes,
    publish: (headers: TraceHeaders) => Promise<T>,
  ): Promise<T>;
  /** Sends what is recorded and stops; resolves even when the collector cannot be reached. */
  shutdown(): Promise<void>;
}
