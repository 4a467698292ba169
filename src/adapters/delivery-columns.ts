import type { DeliveryPolicy } from "../domain/delivery-rules.js";

/** The §11 columns (CONTRACT §11) as the SQL stores keep them: `delivery` as JSON text. */

export function deliveryOf(text: string | null): DeliveryPolicy | null {
  return text === null ? null : (JSON.parse(text) as DeliveryPolicy);
}

export function deliveryText(delivery: DeliveryPolicy | null | undefined): string | null {
  if (!delivery) return null;
  const { maxRetries, backoffMs, completionTimeoutMs } = delivery;
  return JSON.stringify({ maxRetries, backoffMs, completionTimeoutMs });
}

const TRACKING_MEMBERS = [
  "delivery",
  "createdBy",
  "createdVia",
  "firedAtMs",
  "completedAtMs",
  "result",
  "lastReason",
  "deadlineAtMs",
] as const;

/** The trace members (CONTRACT §13): all set, or all unset when the timer has no trace-id. */
const TRACE_MEMBERS = ["traceId", "traceFlags", "traceState", "traceSpanId"] as const;

/**
 * A timer row with its §11 members parsed, and those that are unset (null, attempt 0) left out, so
 * that a timer without completion tracking reads back exactly as it was stored.
 */
export function withTracking<T extends object>(row: T): T {
  const timer = row as Record<string, unknown>;
  if (typeof timer.delivery === "string") timer.delivery = deliveryOf(timer.delivery);
  for (const member of TRACKING_MEMBERS) if (timer[member] === null) delete timer[member];
  if (timer.attempt === 0) delete timer.attempt;
  // Nor one without a history (CONTRACT §19).
  if (timer.history === null) delete timer.history;
  return withoutUnsetTrace(row);
}

/** Leaves the trace members out of a row whose timer has no trace, as every store reads it back. */
export function withoutUnsetTrace<T extends object>(row: T): T {
  const timer = row as Record<string, unknown>;
  if (timer.traceId === null) for (const member of TRACE_MEMBERS) delete timer[member];
  return row;
}
