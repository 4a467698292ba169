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
  "traceId",
  "traceFlags",
  "traceState",
  "traceSpanId",
] as const;

/**
 * A timer row with its §11 members parsed, and those that are unset (null, attempt 0) left out, so
 * that a timer without completion tracking reads back exactly as it was stored.
 */
export function withTracking<T extends object>(row: T): T {
  const timer = row as Record<string, unknown>;
  if (typeof timer.delivery === "string") timer.delivery = deliveryOf(timer.delivery);
  for (const member of TRACKING_MEMBERS) if (timer[member] === null) delete timer[member];
  if (timer.attempt === 0) delete timer.attempt;
  return row;
}
