import type { Timer } from "../../domain/timer.js";
import { parseRecurrence } from "../../domain/recurrence.js";
import { deliveryOf } from "../delivery-columns.js";

/**
 * The rows the transfer adapters read (CONTRACT §18), mapped as the stores map them, from the
 * shared column list, so that an export holds exactly what the store would fire.
 */

/** A timer row with `repeat` and `delivery` still JSON text. */
export type TransferTimerRow = Omit<Timer, "repeat" | "delivery"> & { repeat: string | null; delivery: string | null };

/**
 * The Timer of a row, as the stores read it (withTracking's shape: unset tracking and trace members
 * absent), built member by member rather than by deleting from the row: an export maps millions.
 */
export function timerFromRow(row: TransferTimerRow): Timer {
  const timer: Record<string, unknown> = {
    tenantId: row.tenantId,
    serviceCallId: row.serviceCallId,
    state: row.state,
    dueAtMs: row.dueAtMs,
    data: row.data,
    correlationId: row.correlationId,
    commandTs: row.commandTs,
    generation: row.generation,
    registeredAtMs: row.registeredAtMs,
    reachedAtMs: row.reachedAtMs,
    updatedAtMs: row.updatedAtMs,
    repeat: row.repeat === null ? null : parseRecurrence(row.repeat),
    occurrence: row.occurrence,
    maxLatenessMs: row.maxLatenessMs,
  };
  if (row.delivery !== null) timer.delivery = deliveryOf(row.delivery);
  for (const member of TRACKING_TEXT_MEMBERS) if (row[member] != null) timer[member] = row[member];
  if (row.attempt != null && row.attempt !== 0) timer.attempt = row.attempt;
  if (row.traceId != null) {
    timer.traceId = row.traceId;
    timer.traceFlags = row.traceFlags ?? null;
    timer.traceState = row.traceState ?? null;
    timer.traceSpanId = row.traceSpanId ?? null;
  }
  if (row.history != null) timer.history = row.history;
  return timer as unknown as Timer;
}

const TRACKING_TEXT_MEMBERS = ["createdBy", "createdVia", "firedAtMs", "completedAtMs", "result", "lastReason", "deadlineAtMs"] as const;

/** A prefix cancel row, aliased to the record's members. */
export interface TransferPrefixCancelRow {
  readonly tenantId: string;
  readonly serviceCallIdPrefix: string;
  readonly commandTs: number;
  readonly recordedAtMs: number;
}

export const PREFIX_CANCEL_SELECT = (quote: boolean): string => {
  const q = (alias: string) => (quote ? `"${alias}"` : alias);
  return `tenant_id AS ${q("tenantId")}, service_call_id_prefix AS ${q("serviceCallIdPrefix")}, command_ts AS ${q("commandTs")}, updated_at AS ${q("recordedAtMs")}`;
};
