import type { Timer } from "../../domain/timer.js";
import { parseRecurrence } from "../../domain/recurrence.js";
import { withTracking } from "../delivery-columns.js";
import { timerSelectList } from "./timer-columns.js";

/**
 * The rows the transfer adapters read (CONTRACT §18), mapped as the stores map them, from the
 * shared column list, so that an export holds exactly what the store would fire.
 */

/** A select list of every Timer member; `quote` for Postgres (it folds unquoted aliases). */
export const transferTimerSelect = (quote: boolean): string => timerSelectList({ quote });

/** A timer row with `repeat` and `delivery` still JSON text. */
export type TransferTimerRow = Omit<Timer, "repeat" | "delivery"> & { repeat: string | null; delivery: string | null };

export function timerFromRow(row: TransferTimerRow): Timer {
  return withTracking({ ...row, repeat: row.repeat === null ? null : parseRecurrence(row.repeat) }) as Timer;
}

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
