import type Database from "better-sqlite3";
import { NO_UPPER_BOUND, listByKeyset, scanStartOf, type ScannedKey } from "../../app/queries/keyset-list.js";
import { listByChanged, type ChangedIndex, type ChangedKey } from "../../app/queries/changed-list.js";
import { histogramOf, windowEndOf, type BucketCount } from "../../app/queries/due-histogram.js";
import {
  TIMER_STATES,
  type StoredTimerState,
  type ChangedPage,
  type DueHistogram,
  type DueHistogramQuery,
  type TimerCounts,
  type TimerListQuery,
  type TimerPage,
  type TimerQueries,
  type TimerRecord,
} from "../../app/queries/timer-queries.js";
import type { TimerKey } from "../../domain/timer.js";
import { timerSelectList } from "../storage/timer-columns.js";
import { SQLITE_HISTORY_COLUMN } from "./sqlite-timer-history.js";

// Aliased to the field names of TimerRecord, so a row is a record without mapping.
const RECORD_COLUMNS = timerSelectList({
  quote: false,
  only: [
    "tenantId",
    "serviceCallId",
    "state",
    "dueAtMs",
    "data",
    "correlationId",
    "commandTs",
    "generation",
    "registeredAtMs",
    "reachedAtMs",
    "updatedAtMs",
    "repeat",
    "occurrence",
    "attempt",
    "firedAtMs",
    "completedAtMs",
    "result",
    "lastReason",
    "createdBy",
    "createdVia",
    "traceId",
  ],
});

/**
 * One state's slice of timer_schedules_tenant_state_due_idx (tenant_id, state, due_at,
 * service_call_id): a seek to the cursor, then entries in order, index only (no table access).
 * `LIMIT +@scanLimit`, as every bound LIMIT here: see sqlite-timer-statements.ts.
 */
function scanBranch(state: string): string {
  return `
    SELECT state, due_at AS dueAtMs, service_call_id AS serviceCallId FROM timer_schedules
    WHERE tenant_id = @tenantId AND state = '${state}' AND due_at < @dueBeforeMs
      AND (due_at, service_call_id) > (@startDueAtMs, @startServiceCallId)
    ORDER BY due_at, service_call_id LIMIT +@scanLimit`;
}

/** Every state: the first `scanLimit` entries of each state's slice, merged (at most 8 × scanLimit rows sorted). */
const SCAN_ALL_STATES = `
  SELECT * FROM (${TIMER_STATES.map((state) => `SELECT * FROM (${scanBranch(state)})`).join(" UNION ALL ")})
  ORDER BY dueAtMs, serviceCallId LIMIT +@scanLimit`;

/**
 * Newest changes first, walking one of the (…, updated_at, service_call_id) indexes backwards from
 * the cursor down to changedSince, index only.
 */
/** The states of timer_schedules_tenant_state_updated_idx (a partial index), in its order. */
const OPERATOR_STATES = ["Cancelled", "Missed", "Fired", "Completed", "Failed", "TimedOut"];

function scanChanged(by: ChangedIndex["by"], state = "Failed"): string {
  // The state inlined (one of the stored states, checked by the request schema): the planner can
  // then use the partial index of the states it holds.
  // SQLite uses a partial index only when the query repeats its condition word for word.
  const partial = OPERATOR_STATES.includes(state) ? `AND state IN (${OPERATOR_STATES.map((s) => `'${s}'`).join(", ")})` : "";
  const range = by === "state" ? `AND state = '${state}' ${partial}` : by === "createdBy" ? "AND created_by = @createdBy" : "";
  return `
    SELECT updated_at AS updatedAtMs, service_call_id AS serviceCallId FROM timer_schedules
    WHERE tenant_id = @tenantId ${range} AND updated_at >= @sinceMs
      AND (updated_at, service_call_id) < (@beforeUpdatedAtMs, @beforeServiceCallId)
    ORDER BY updated_at DESC, service_call_id DESC LIMIT +@scanLimit`;
}

/** The statements, exported for the EXPLAIN QUERY PLAN checks of the tests. */
export const SQLITE_QUERY_SQL = {
  get: `SELECT ${RECORD_COLUMNS} FROM timer_schedules WHERE tenant_id = @tenantId AND service_call_id = @serviceCallId`,
  getWithHistory: `SELECT ${RECORD_COLUMNS}, ${SQLITE_HISTORY_COLUMN} FROM timer_schedules WHERE tenant_id = @tenantId AND service_call_id = @serviceCallId`,
  scanOneState: scanBranch("Scheduled"),
  scanAllStates: SCAN_ALL_STATES,
  // The chart of what is coming: bounded walks of the Scheduled slice, index only.
  dueBuckets: `
    SELECT CAST((due_at - @fromMs) / @bucketMs AS INTEGER) AS bucket, count(*) AS count FROM (
      SELECT due_at FROM timer_schedules
      WHERE tenant_id = @tenantId AND state = 'Scheduled' AND due_at >= @fromMs AND due_at < @toMs
      ORDER BY due_at LIMIT +@capPlusOne)
    GROUP BY bucket`,
  overdueCount: `
    SELECT count(*) AS count FROM (
      SELECT 1 FROM timer_schedules WHERE tenant_id = @tenantId AND state = 'Scheduled' AND due_at < @fromMs LIMIT +@capPlusOne)`,
  scanChangedByTenant: scanChanged("tenant"),
  scanChangedByState: scanChanged("state"),
  scanChangedByCreatedBy: scanChanged("createdBy"),
  // Kept by the writer (batch-tallies.ts): a few rows, not the tenant's index range.
  countByState: `SELECT state, count, duration_sum_ms AS durationSumMs, duration_count AS durationCount
    FROM timer_state_counts WHERE tenant_id = @tenantId`,
  nextDue: "SELECT min(due_at) AS dueAtMs FROM timer_schedules WHERE tenant_id = @tenantId AND state = 'Scheduled'",
  // A loose index scan: one primary-key seek per tenant instead of reading every row.
  tenants: `
    WITH RECURSIVE tenants(tenantId) AS (
      SELECT min(tenant_id) FROM timer_schedules
      UNION ALL
      SELECT (SELECT min(tenant_id) FROM timer_schedules WHERE tenant_id > tenants.tenantId) FROM tenants WHERE tenantId IS NOT NULL
    )
    SELECT tenantId FROM tenants WHERE tenantId IS NOT NULL LIMIT +@limit`,
} as const;

type ScanParams = {
  tenantId: string;
  dueBeforeMs: number;
  /** The scan starts after this position (scanStartOf): the cursor or dueAfter. */
  startDueAtMs: number;
  startServiceCallId: string;
  scanLimit: number;
};

/**
 * TimerQueries on the service's SQLite connection (`SqliteTimerStore.database`), with prepared
 * statements. Every statement is served by an index (checked with EXPLAIN QUERY PLAN in
 * test/contract/sqlite-timer-queries.test.ts): get by the primary key, list and the next due time by
 * timer_schedules_tenant_state_due_idx, counts from timer_state_counts (kept by the writer), tenants by skipping along the primary key.
 */
export class SqliteTimerQueries implements TimerQueries {
  readonly #byKey: Database.Statement<[TimerKey], TimerRecord>;
  readonly #byKeyWithHistory: Database.Statement<[TimerKey], TimerRecord>;
  readonly #scanState: ReadonlyMap<StoredTimerState, Database.Statement<[ScanParams], ScannedKey>>;
  readonly #scanAll: Database.Statement<[ScanParams], ScannedKey>;
  readonly #countByState: Database.Statement<
    [{ tenantId: string }],
    { state: StoredTimerState; count: number; durationSumMs: number; durationCount: number }
  >;
  readonly #nextDue: Database.Statement<[{ tenantId: string }], { dueAtMs: number | null }>;
  readonly #tenants: Database.Statement<[{ limit: number }], { tenantId: string }>;
  readonly #dueBuckets: Database.Statement<[Record<string, unknown>], BucketCount>;
  readonly #overdueCount: Database.Statement<[Record<string, unknown>], { count: number }>;
  readonly #scanChanged: ReadonlyMap<string, Database.Statement<[Record<string, unknown>], ChangedKey>>;

  constructor(db: Database.Database) {
    this.#byKey = db.prepare(SQLITE_QUERY_SQL.get);
    this.#byKeyWithHistory = db.prepare(SQLITE_QUERY_SQL.getWithHistory);
    this.#scanState = new Map(TIMER_STATES.map((state) => [state, db.prepare(scanBranch(state))]));
    this.#scanAll = db.prepare(SQLITE_QUERY_SQL.scanAllStates);
    this.#countByState = db.prepare(SQLITE_QUERY_SQL.countByState);
    this.#nextDue = db.prepare(SQLITE_QUERY_SQL.nextDue);
    this.#tenants = db.prepare(SQLITE_QUERY_SQL.tenants);
    this.#dueBuckets = db.prepare(SQLITE_QUERY_SQL.dueBuckets);
    this.#overdueCount = db.prepare(SQLITE_QUERY_SQL.overdueCount);
    const prepare = (sql: string) => db.prepare<[Record<string, unknown>], ChangedKey>(sql);
    this.#scanChanged = new Map([
      ["tenant", prepare(scanChanged("tenant"))],
      ["createdBy", prepare(scanChanged("createdBy"))],
      ...TIMER_STATES.map((state) => [`state:${state}`, prepare(scanChanged("state", state))] as const),
    ]);
  }

  async get(key: TimerKey, options?: { readonly history?: boolean }): Promise<TimerRecord | undefined> {
    const statement = options?.history === true ? this.#byKeyWithHistory : this.#byKey;
    return statement.get({ tenantId: key.tenantId, serviceCallId: key.serviceCallId });
  }

  async list(query: TimerListQuery): Promise<TimerPage> {
    const { tenantId, state } = query;
    const statement = state === undefined ? this.#scanAll : this.#scanState.get(state)!;
    const start = scanStartOf(query);
    return listByKeyset(
      query,
      (scanLimit) =>
        statement.all({
          tenantId,
          dueBeforeMs: query.dueBeforeMs ?? NO_UPPER_BOUND,
          startDueAtMs: start.dueAtMs,
          startServiceCallId: start.serviceCallId,
          scanLimit,
        }),
      (ids) => ids.flatMap((serviceCallId) => this.#byKey.get({ tenantId, serviceCallId }) ?? []),
    );
  }

  async listChanged(query: TimerListQuery): Promise<ChangedPage> {
    const { tenantId } = query;
    return listByChanged(
      query,
      ({ index, before, sinceMs, scanLimit }) =>
        this.#scanChanged.get(index.by === "state" ? `state:${index.state}` : index.by)!.all({
          tenantId,
          ...(index.by === "createdBy" ? { createdBy: index.createdBy } : {}),
          sinceMs,
          beforeUpdatedAtMs: before.updatedAtMs,
          beforeServiceCallId: before.serviceCallId,
          scanLimit,
        }),
      (ids) => ids.flatMap((serviceCallId) => this.#byKey.get({ tenantId, serviceCallId }) ?? []),
    );
  }

  async dueHistogram(query: DueHistogramQuery): Promise<DueHistogram> {
    const { tenantId, fromMs, bucketMs, cap } = query;
    const params = { tenantId, fromMs, bucketMs, toMs: windowEndOf(query), capPlusOne: cap + 1 };
    const overdue = this.#overdueCount.get(params)?.count ?? 0;
    return histogramOf(query, overdue, this.#dueBuckets.all(params));
  }

  async stats(tenantId: string): Promise<TimerCounts> {
    const byState = Object.fromEntries(TIMER_STATES.map((s) => [s, 0])) as Record<StoredTimerState, number>;
    let avgDurationMs: number | null = null;
    for (const { state, count, durationSumMs, durationCount } of this.#countByState.all({ tenantId })) {
      byState[state] = count;
      if (state === "Completed" && durationCount > 0) avgDurationMs = durationSumMs / durationCount;
    }
    return { byState, nextDueAtMs: this.#nextDue.get({ tenantId })?.dueAtMs ?? null, avgDurationMs };
  }

  async tenants(limit: number): Promise<string[]> {
    return this.#tenants.all({ limit }).map((row) => row.tenantId);
  }
}
