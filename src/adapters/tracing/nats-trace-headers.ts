import { parseTraceParent } from "@opentelemetry/core";
import type { MsgHdrs } from "@nats-io/transport-node";
import type { TraceContext } from "../../domain/trace-context.js";

/** The W3C limit of a `tracestate` header; a longer one is dropped rather than cut. */
const MAX_TRACESTATE_LENGTH = 512;

/**
 * Whether `tracestate` can travel on the service's events as it came: a NATS header value, within
 * the W3C limit. W3C allows printable ASCII only; a value with anything else (a bare CR or LF) is
 * dropped rather than cut or escaped.
 */
export function isCarriableTraceState(value: string): boolean {
  return value.length <= MAX_TRACESTATE_LENGTH && /^[\x20-\x7e]*$/.test(value);
}

/**
 * The trace context of a command's headers (CONTRACT §13), or undefined when it has no valid
 * `traceparent` (wrong version or length, upper-case hex, all-zero ids: ignored, never rejected).
 * `tracestate` is kept as it came, not as the propagator would re-serialize it, unless it cannot be
 * carried. Headers that cannot be read at all count as none: a header never costs a command.
 */
export function traceFromHeaders(readHeaders: () => MsgHdrs | undefined): TraceContext | undefined {
  try {
    // Headers are parsed when first read; a block the client cannot parse throws there.
    const headers = readHeaders();
    if (headers === undefined) return undefined;
    // The propagator's own parse, without the context and TraceState objects it would build around it.
    const traceparent = headers.get("traceparent");
    const span = traceparent === "" ? null : parseTraceParent(traceparent);
    if (span === null) return undefined;
    const traceState = headers.get("tracestate");
    return {
      traceId: span.traceId,
      traceFlags: span.traceFlags,
      traceState: traceState === "" || !isCarriableTraceState(traceState) ? null : traceState,
      spanId: span.spanId,
    };
  } catch {
    return undefined;
  }
}
