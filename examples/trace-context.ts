/**
 * W3C Trace Context without a tracing library: enough to start a trace in the producer and to
 * continue it in the consumer. With OpenTelemetry, `propagation.inject`/`propagation.extract`
 * (`@opentelemetry/api`) do this for you, and a span started in the extracted context is the child.
 */
import { randomBytes } from "node:crypto";

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-.*)?$/;

export interface TraceContext {
  readonly traceId: string;
  /** The span the header names: the parent of whatever the receiver does. */
  readonly parentId: string;
  readonly flags: string;
}

/** A `traceparent` starting a new, sampled trace: version 00, a random trace-id and span-id. */
export function newTraceparent(): string {
  return `00-${randomBytes(16).toString("hex")}-${randomBytes(8).toString("hex")}-01`;
}

/** The trace a `traceparent` header names; undefined when it is missing or invalid. */
export function parseTraceparent(header: string | undefined): TraceContext | undefined {
  const match = header === undefined ? null : TRACEPARENT.exec(header);
  if (match === null || match[1] === "ff" || /^0+$/.test(match[2]!) || /^0+$/.test(match[3]!)) return undefined;
  return { traceId: match[2]!, parentId: match[3]!, flags: match[4]! };
}

/** The `traceparent` of a child span in the same trace: its own span-id, the parent's flags. */
export function childTraceparent(parent: TraceContext): string {
  return `00-${parent.traceId}-${randomBytes(8).toString("hex")}-${parent.flags}`;
}
