import type { TraceContext } from "../../domain/trace-context.js";
import type { CommandSpan, TimerSpanAttributes, TimerTracing, TraceHeaders } from "../../app/timer-tracing.js";
import { formatTraceparent, randomSpanId, randomTraceId } from "./trace-ids.js";
import { isCarriableTraceState } from "./nats-trace-headers.js";

/** New traces are marked sampled, so that a consumer records what the service started. */
const SAMPLED = 1;

/**
 * Trace context without spans, when no exporter is configured: each event's `traceparent` has the
 * timer's trace-id and flags and a fresh span-id of the service's own, `tracestate` copied.
 */
export class HeaderTracing implements TimerTracing {
  newTrace(): TraceContext {
    return { traceId: randomTraceId(), traceFlags: SAMPLED, traceState: null, spanId: null };
  }

  startCommand(trace: TraceContext): CommandSpan {
    return { trace, end: () => undefined };
  }

  publishEvent<T>(
    trace: TraceContext | undefined,
    _attributes: TimerSpanAttributes,
    publish: (headers: TraceHeaders) => Promise<T>,
  ): Promise<T> {
    return publish(eventHeaders(trace ?? this.newTrace(), randomSpanId()));
  }

  async shutdown(): Promise<void> {}
}

export function eventHeaders(trace: TraceContext, spanId: string): TraceHeaders {
  const traceparent = formatTraceparent(trace.traceId, spanId, trace.traceFlags);
  // A stored tracestate that a header cannot carry is left off rather than failing the publish.
  return trace.traceState === null || !isCarriableTraceState(trace.traceState)
    ? { traceparent }
    : { traceparent, tracestate: trace.traceState };
}
