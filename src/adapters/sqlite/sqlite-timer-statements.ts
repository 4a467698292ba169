import type Database from "better-sqlite3";
import type { DueTimer, TenantDuePosition } from "../../app/timer-store.js";
import type { DeadlineTimer } from "../../domain/delivery-rules.js";
import type { Timer } from "../../domain/timer.js";
import type { PrefixCancel } from "../../domain/prefix-cancel.js";
import { parseRecurrence } from "../../domain/recurrence.js";
import { prefixUpperBound } from "../../domain/prefix-cancel.js";
import { withTracking } from "../delivery-columns.js";
import { TIMER_COLUMNS, TIMER_COLUMN_NAMES, TIMER_VALUE_COLUMNS, timerSelectList } from "../storage/timer-columns.js";

/**
 * The prepared statements of SqliteTimerStore, prepared once per connection. The hot paths bind
 * positionally where they can: named binding costs more than the statement itself there.
 *
 * A bound LIMIT is written `LIMIT +@limit`: SQLite's planner reads a LIMIT that is a bare parameter
 * as a constant, so that every new binding of it makes the statement prepare itself again at its
 * next run (as costly as the statement: tens of µs). The unary plus hides the parameter from the planner.
 */

const TIMER_SELECT = timerSelectList({ quote: false });

// Only what firing needs: building row objects is most of findDue's cost in a burst.
const DUE_TIMER_SELECT = timerSelectList({
  quote: false,
  only: [
    "tenantId",
    "serviceCallId",
    "dueAtMs",
    "generation",
    "data",
    "correlationId",
    "occurrence",
    "repeat",
    "maxLatenessMs",
    "commandTs",
    "reachedAtMs",
    "delivery",
    "traceId",
    "traceFlags",
    "traceState",
    "traceSpanId",
  ],
});

// A Fired timer whose deadline passed (CONTRACT §11).
const DEADLINE_TIMER_SELECT = timerSelectList({
  quote: false,
  only: [
    "tenantId",
    "serviceCallId",
    "dueAtMs",
    "generation",
    "data",
    "correlationId",
    "reachedAtMs",
    "updatedAtMs",
    "lastReason",
    "delivery",
    "attempt",
    "deadlineAtMs",
    "traceId",
    "traceFlags",
    "traceState",
    "traceSpanId",
  ],
});

/** A row as SQLite returns it: `repeat` and `delivery` are JSON text (see recurrenceText). */
type Row<T> = Omit<T, "repeat" | "delivery"> & { repeat: string | null; delivery: string | null };
export type TimerRow = Row<Timer>;
export type DueTimerRow = Row<Omit<DueTimer, "prefixCancelTs">>;
export type DeadlineTimerRow = Omit<DeadlineTimer, "delivery"> & { delivery: string };

export function timerOf(row: TimerRow | undefined): Timer | undefined {
  if (row === undefined) return undefined;
  return withTracking({ ...row, repeat: row.repeat === null ? null : parseRecurrence(row.repeat) }) as Timer;
}

const UPSERT_VALUES = TIMER_COLUMNS.map(() => "?").join(", ");
const UPSERT_SET = TIMER_VALUE_COLUMNS.map((column) => `${column} = excluded.${column}`).join(", ");

/** The fair claim's statement, exported for the EXPLAIN QUERY PLAN check of the tests. */
export const SQLITE_CLAIM_SQL = {
  // For each candidate the correlated subquery walks its due range from its position in
  // timer_schedules_tenant_state_due_idx, `share` entries, index only; those rows are then read by
  // primary key. One statement instead of one per tenant: one snapshot, one read transaction.
  candidatesDue: `
    SELECT ${DUE_TIMER_SELECT} FROM json_each(@candidates) AS candidate
    JOIN timer_schedules AS timer ON timer.tenant_id = candidate.value ->> 0 AND timer.service_call_id IN (
      SELECT due.service_call_id FROM timer_schedules AS due
      WHERE due.tenant_id = candidate.value ->> 0 AND due.state = 'Scheduled' AND due.due_at <= @nowMs
        AND (due.due_at, due.service_call_id) > (candidate.value ->> 1, candidate.value ->> 2)
      ORDER BY due.due_at, due.service_call_id LIMIT +@share)
    ORDER BY candidate.key, timer.due_at, timer.service_call_id`,
} as const;

/** A tenant's position meaning "from its first due timer": below any due time a timer can have. */
const FROM_FIRST: readonly [number, string] = [Number.MIN_SAFE_INTEGER, ""];

/** The `candidates` parameter of selectCandidatesDue: each tenant with the position to read after. */
export function dueCandidatesJson(candidates: readonly { tenantId: string; after: TenantDuePosition | undefined }[]): string {
  return JSON.stringify(
    candidates.map(({ tenantId, after }) =>
      after === undefined ? [tenantId, ...FROM_FIRST] : [tenantId, after.dueAtMs, after.serviceCallId],
    ),
  );
}

export type PrefixCancelKey = Pick<PrefixCancel, "tenantId" | "serviceCallIdPrefix">;

export interface SqliteTimerStatements {
  readonly selectByKey: Database.Statement<[tenantId: string, serviceCallId: string], TimerRow>;
  readonly upsert: Database.Statement<[unknown[]]>;
  readonly insertNew: Database.Statement<[unknown[]]>;
  readonly selectDueTenants: Database.Statement<[{ nowMs: number; limit: number }], { tenantId: string }>;
  /**
   * Of each candidate (`dueCandidatesJson`), its first `share` due timers after its position, in
   * candidate order, then (due time, serviceCallId) order: one statement for all of them.
   */
  readonly selectCandidatesDue: Database.Statement<[{ candidates: string; nowMs: number; share: number }], DueTimerRow>;
  readonly recordFiring: Database.Statement<unknown[]>;
  readonly selectDeadlines: Database.Statement<[{ nowMs: number; limit: number }], DeadlineTimerRow>;
  readonly recordDeadline: Database.Statement<[Record<string, unknown>]>;
  readonly selectNextDeadlineAt: Database.Statement<[], { deadlineAtMs: number | null }>;
  /** Tenants of timer_due_tenants by their lower bound, lowest first: nextDueAt's walk. */
  readonly selectDueTenantBounds: Database.Statement<[limit: number], { tenantId: string; boundMs: number }>;
  readonly selectTenantEarliestDue: Database.Statement<[tenantId: string], { dueAtMs: number | null }>;
  readonly countScheduled: Database.Statement<[], { count: number }>;
  readonly countScheduledOfTenant: Database.Statement<[string], { count: number }>;
  readonly selectPrefixCancels: Database.Statement<[], PrefixCancel & { progressKey: string | null }>;
  readonly selectPrefixCancel: Database.Statement<[PrefixCancelKey], { commandTs: number; progressKey: string | null }>;
  readonly upsertPrefixCancel: Database.Statement<[PrefixCancel & { nowMs: number }]>;
  readonly updatePrefixProgress: Database.Statement<[PrefixCancelKey & { progressKey: string | null }]>;
  /**
   * Sets each tenant's entry in timer_due_tenants to its earliest Scheduled due time, or removes it;
   * run inside a write transaction (prepareRaiseEarliest).
   */
  readonly raiseEarliest: (tenantIds: Iterable<string>) => void;
  /** The keyset query of a sweep step: after the progress (or from the prefix), below the prefix's upper bound. */
  sweepSelect(prefix: string, progressKey: string): Database.Statement<[Record<string, unknown>], TimerRow>;
}

const EARLIEST_DUE_SQL = "SELECT min(due_at) AS dueAtMs FROM timer_schedules WHERE tenant_id = ? AND state = 'Scheduled'";

/**
 * SqliteTimerStatements.raiseEarliest on `db`. A transaction's tallies (batch-tallies.ts) only
 * lower an entry; every write that may raise a tenant's earliest due time (a firing, a cancel, a later due
 * time, an import over a timer) calls this in its transaction, so the entries stay exact.
 */
function prepareRaiseEarliest(db: Database.Database): (tenantIds: Iterable<string>) => void {
  const earliestDue = db.prepare<[string], { dueAtMs: number | null }>(EARLIEST_DUE_SQL);
  const setEarliest = db.prepare("UPDATE timer_due_tenants SET earliest_due_at = ? WHERE tenant_id = ?");
  const deleteDueTenant = db.prepare("DELETE FROM timer_due_tenants WHERE tenant_id = ?");
  // One writer per file: nothing can schedule a timer between the read and the write.
  return (tenantIds) => {
    for (const tenantId of tenantIds) {
      const { dueAtMs } = earliestDue.get(tenantId) ?? { dueAtMs: null };
      if (dueAtMs === null) deleteDueTenant.run(tenantId);
      else setEarliest.run(dueAtMs, tenantId);
    }
  };
}

export function prepareTimerStatements(db: Database.Database): SqliteTimerStatements {
  const sweepSelects = new Map<string, Database.Statement<[Record<string, unknown>], TimerRow>>();
  return {
    selectByKey: db.prepare<[tenantId: string, serviceCallId: string], TimerRow>(
      `SELECT ${TIMER_SELECT} FROM timer_schedules WHERE tenant_id = ? AND service_call_id = ?`,
    ),
    insertNew: db.prepare<[unknown[]]>(
      `INSERT INTO timer_schedules (${TIMER_COLUMN_NAMES}) VALUES (${UPSERT_VALUES}) ON CONFLICT DO NOTHING`,
    ),
    upsert: db.prepare<[unknown[]]>(`
      INSERT INTO timer_schedules (${TIMER_COLUMN_NAMES}) VALUES (${UPSERT_VALUES})
      ON CONFLICT (tenant_id, service_call_id) DO UPDATE SET ${UPSERT_SET}`),
    selectDueTenants: db.prepare<[{ nowMs: number; limit: number }], { tenantId: string }>(`
      SELECT tenant_id AS tenantId FROM timer_due_tenants WHERE earliest_due_at <= @nowMs
      ORDER BY earliest_due_at, tenant_id LIMIT +@limit`),
    selectCandidatesDue: db.prepare<[{ candidates: string; nowMs: number; share: number }], DueTimerRow>(SQLITE_CLAIM_SQL.candidatesDue),
    // Positional, like the upsert: named binding costs more than the statement on this hot path.
    recordFiring: db.prepare<unknown[]>(`
      UPDATE timer_schedules SET state = ?, due_at = ?, occurrence = ?, reached_at = ?,
        command_ts = max(command_ts, ?), updated_at = ?, attempt = coalesce(?, attempt),
        fired_at = coalesce(?, fired_at), deadline_at = ?
      WHERE tenant_id = ? AND service_call_id = ? AND state = 'Scheduled' AND due_at = ? AND generation = ?`),
    // `state = 'Fired'` spelled literally: the partial index timer_schedules_fired_deadline_idx.
    selectDeadlines: db.prepare<[{ nowMs: number; limit: number }], DeadlineTimerRow>(`
      SELECT ${DEADLINE_TIMER_SELECT} FROM timer_schedules WHERE state = 'Fired' AND deadline_at <= @nowMs
      ORDER BY deadline_at, tenant_id, service_call_id LIMIT +@limit`),
    recordDeadline: db.prepare<[Record<string, unknown>]>(`
      UPDATE timer_schedules SET state = @state, attempt = @nextAttempt, reached_at = @reachedAtMs,
        deadline_at = @nextDeadlineAtMs, last_reason = @lastReason, updated_at = @updatedAtMs
      WHERE tenant_id = @tenantId AND service_call_id = @serviceCallId AND state = 'Fired'
        AND attempt = @attempt AND deadline_at = @deadlineAtMs`),
    selectNextDeadlineAt: db.prepare<[], { deadlineAtMs: number | null }>(
      "SELECT min(deadline_at) AS deadlineAtMs FROM timer_schedules WHERE state = 'Fired'",
    ),
    selectPrefixCancels: db.prepare<[], PrefixCancel & { progressKey: string | null }>(`
      SELECT tenant_id AS tenantId, service_call_id_prefix AS serviceCallIdPrefix, command_ts AS commandTs,
        progress_key AS progressKey
      FROM timer_prefix_cancels`),
    selectPrefixCancel: db.prepare<[PrefixCancelKey], { commandTs: number; progressKey: string | null }>(`
      SELECT command_ts AS commandTs, progress_key AS progressKey FROM timer_prefix_cancels
      WHERE tenant_id = @tenantId AND service_call_id_prefix = @serviceCallIdPrefix`),
    upsertPrefixCancel: db.prepare<[PrefixCancel & { nowMs: number }]>(`
      INSERT INTO timer_prefix_cancels (tenant_id, service_call_id_prefix, command_ts, updated_at, progress_key)
      VALUES (@tenantId, @serviceCallIdPrefix, @commandTs, @nowMs, '')
      ON CONFLICT (tenant_id, service_call_id_prefix) DO UPDATE SET
        command_ts = excluded.command_ts, updated_at = excluded.updated_at, progress_key = ''`),
    updatePrefixProgress: db.prepare<[PrefixCancelKey & { progressKey: string | null }]>(`
      UPDATE timer_prefix_cancels SET progress_key = @progressKey
      WHERE tenant_id = @tenantId AND service_call_id_prefix = @serviceCallIdPrefix`),
    selectDueTenantBounds: db.prepare<[number], { tenantId: string; boundMs: number }>(
      "SELECT tenant_id AS tenantId, earliest_due_at AS boundMs FROM timer_due_tenants ORDER BY earliest_due_at, tenant_id LIMIT +?",
    ),
    selectTenantEarliestDue: db.prepare<[string], { dueAtMs: number | null }>(EARLIEST_DUE_SQL),
    // Kept by the writer, once per transaction (batch-tallies.ts).
    countScheduled: db.prepare<[], { count: number }>(
      "SELECT coalesce(sum(count), 0) AS count FROM timer_state_counts WHERE state = 'Scheduled'",
    ),
    countScheduledOfTenant: db.prepare<[string], { count: number }>(
      "SELECT count FROM timer_state_counts WHERE tenant_id = ? AND state = 'Scheduled'",
    ),

    raiseEarliest: prepareRaiseEarliest(db),
    sweepSelect(prefix, progressKey) {
      const lower = progressKey === "" ? "service_call_id >= @from" : "service_call_id > @from";
      const upper = prefixUpperBound(prefix) === null ? "" : "AND service_call_id < @upper";
      const sql = `SELECT ${TIMER_SELECT} FROM timer_schedules WHERE tenant_id = @tenantId AND ${lower} ${upper}
        ORDER BY service_call_id LIMIT +@limit`;
      let statement = sweepSelects.get(sql);
      if (statement === undefined) {
        statement = db.prepare(sql);
        sweepSelects.set(sql, statement);
      }
      return statement;
    },
  };
}
