import type { Timer } from "../../domain/timer.js";
import { recurrenceText } from "../../domain/recurrence.js";
import { deliveryText } from "../delivery-columns.js";

/** One column of timer_schedules that holds a member of Timer. */
export interface TimerColumn {
  readonly column: string;
  /** The Timer member it holds (the alias a SELECT gives it). */
  readonly field: string;
  /** What is written: `repeat` and `delivery` as JSON text, absent members as their defaults. */
  readonly value: (timer: Timer) => unknown;
}

/**
 * The columns of a stored timer in one order: both SQL stores build their select lists, aliases,
 * insert and upsert statements and parameters from this list.
 */
export const TIMER_COLUMNS: readonly TimerColumn[] = [
  { column: "tenant_id", field: "tenantId", value: (t) => t.tenantId },
  { column: "service_call_id", field: "serviceCallId", value: (t) => t.serviceCallId },
  { column: "state", field: "state", value: (t) => t.state },
  { column: "due_at", field: "dueAtMs", value: (t) => t.dueAtMs },
  { column: "data", field: "data", value: (t) => t.data },
  { column: "correlation_id", field: "correlationId", value: (t) => t.correlationId },
  { column: "command_ts", field: "commandTs", value: (t) => t.commandTs },
  { column: "generation", field: "generation", value: (t) => t.generation },
  { column: "registered_at", field: "registeredAtMs", value: (t) => t.registeredAtMs },
  { column: "reached_at", field: "reachedAtMs", value: (t) => t.reachedAtMs },
  { column: "updated_at", field: "updatedAtMs", value: (t) => t.updatedAtMs },
  { column: "repeat", field: "repeat", value: (t) => (t.repeat == null ? null : recurrenceText(t.repeat)) },
  { column: "occurrence", field: "occurrence", value: (t) => t.occurrence },
  { column: "max_lateness_ms", field: "maxLatenessMs", value: (t) => t.maxLatenessMs },
  { column: "delivery", field: "delivery", value: (t) => deliveryText(t.delivery) },
  { column: "created_by", field: "createdBy", value: (t) => t.createdBy ?? null },
  { column: "created_via", field: "createdVia", value: (t) => t.createdVia ?? null },
  { column: "attempt", field: "attempt", value: (t) => t.attempt ?? 0 },
  { column: "fired_at", field: "firedAtMs", value: (t) => t.firedAtMs ?? null },
  { column: "completed_at", field: "completedAtMs", value: (t) => t.completedAtMs ?? null },
  { column: "result", field: "result", value: (t) => t.result ?? null },
  { column: "last_reason", field: "lastReason", value: (t) => t.lastReason ?? null },
  { column: "deadline_at", field: "deadlineAtMs", value: (t) => t.deadlineAtMs ?? null },
  { column: "trace_id", field: "traceId", value: (t) => t.traceId ?? null },
  { column: "trace_flags", field: "traceFlags", value: (t) => t.traceFlags ?? null },
  { column: "trace_state", field: "traceState", value: (t) => t.traceState ?? null },
  { column: "trace_span_id", field: "traceSpanId", value: (t) => t.traceSpanId ?? null },
];

/** The key columns: never changed by an upsert. */
const KEY_COLUMNS = new Set(["tenant_id", "service_call_id"]);

/** The column names, comma-separated, in TIMER_COLUMNS order. */
export const TIMER_COLUMN_NAMES = TIMER_COLUMNS.map((c) => c.column).join(", ");

/** The columns an upsert overwrites on an existing row (all but the key). */
export const TIMER_VALUE_COLUMNS = TIMER_COLUMNS.map((c) => c.column).filter((c) => !KEY_COLUMNS.has(c));

/**
 * A select list that names each column by its Timer member, so a row is a Timer but for the text
 * of `repeat` and `delivery`. `quote` double-quotes the aliases (Postgres folds unquoted ones to
 * lower case). `only` keeps the named members, in TIMER_COLUMNS order.
 */
export function timerSelectList(options: { readonly quote: boolean; readonly only?: readonly string[] }): string {
  const only = options.only === undefined ? undefined : new Set(options.only);
  return TIMER_COLUMNS.filter((c) => only === undefined || only.has(c.field))
    .map(({ column, field }) => (column === field ? column : `${column} AS ${options.quote ? `"${field}"` : field}`))
    .join(", ");
}

/** The values of one timer's columns, in TIMER_COLUMNS order. */
export function timerColumnValues(timer: Timer): unknown[] {
  return TIMER_COLUMNS.map((c) => c.value(timer));
}
