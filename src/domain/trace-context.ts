/**
 * The W3C trace context a command brought (CONTRACT §13): the trace its timer's events continue.
 * `spanId` is the span the service's spans and events hang under (the producer's span, or the
 * service's own span of the command when spans are exported); null when the trace is the service's.
 */
export interface TraceContext {
  /** 32 lower-case hex digits, not all zero. */
  readonly traceId: string;
  /** The trace-flags byte (bit 0: sampled). */
  readonly traceFlags: number;
  /** The `tracestate` header, copied unchanged; null when absent. */
  readonly traceState: string | null;
  /** 16 lower-case hex digits; null when none. */
  readonly spanId: string | null;
}

/** The trace context as a stored timer keeps it, one member per column; absent on timers stored before tracing. */
export interface TraceMembers {
  readonly traceId?: string | null;
  readonly traceFlags?: number | null;
  readonly traceState?: string | null;
  readonly traceSpanId?: string | null;
}

export function traceMembers(trace: TraceContext): Required<TraceMembers> {
  return { traceId: trace.traceId, traceFlags: trace.traceFlags, traceState: trace.traceState, traceSpanId: trace.spanId };
}

/** The trace context of a stored timer; undefined for a timer stored before tracing. */
export function traceOf(members: TraceMembers): TraceContext | undefined {
  if (members.traceId == null) return undefined;
  return {
    traceId: members.traceId,
    traceFlags: members.traceFlags ?? 0,
    traceState: members.traceState ?? null,
    spanId: members.traceSpanId ?? null,
  };
}
