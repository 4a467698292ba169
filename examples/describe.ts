/** How the examples print an event. */
import type { TimerEvent } from "@timer-service/client";
import { childTraceparent, parseTraceparent } from "./trace-context.js";

/** One line for a person. */
export function describeEvent(event: TimerEvent): string {
  switch (event.type) {
    case "DueTimeReached":
      return `DueTimeReached ${event.tenantId}/${event.payload.serviceCallId}: due ${event.payload.dueAt}, reached ${event.payload.reachedAt} (${event.payload.lateMs} ms late, generation ${event.payload.generation})`;
    case "DueTimeMissed":
      return `DueTimeMissed ${event.tenantId}/${event.payload.serviceCallId}: due ${event.payload.dueAt}, ${event.payload.lateMs} ms late`;
    case "CommandRejected":
      return `CommandRejected ${event.tenantId}/${event.payload.serviceCallId ?? "-"}: ${event.payload.code}: ${event.payload.reason}`;
  }
}

/**
 * The trace the handling belongs to: a child of the event's `traceparent` header. With
 * OpenTelemetry: `tracer.startActiveSpan(name, {}, propagation.extract(context.active(), event.headers), …)`.
 */
export function describeTrace(event: TimerEvent): string {
  const parent = parseTraceparent(event.headers["traceparent"]);
  if (parent === undefined) return "no traceparent on the event: the handling starts a trace of its own";
  return `trace ${parent.traceId}: handled in span ${childTraceparent(parent)} (child of ${parent.parentId})`;
}

/** The event as the service published it (the client adds headers, subject and deliveryCount). */
export function envelopeOf(event: TimerEvent): Record<string, unknown> {
  const { headers: _headers, subject: _subject, deliveryCount: _deliveryCount, ...envelope } = event;
  return envelope;
}
