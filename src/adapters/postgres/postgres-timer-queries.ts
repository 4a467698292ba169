import type pg from "pg";
import { NO_UPPER_BOUND, listByKeyset, scanStartOf, type ScannedKey } from "../../app/queries/keyset-list.js";
import { listByChanged, type ChangedIndex, type ChangedKey } from "../../app/queries/changed-list.js";
import { histogramOf, windowEndOf } from "../../app/queries/due-histogram.js";
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
import { HISTORY_COLUMN } from "./postgres-timer-history.js";

type Row = Record<string, unknown>;

const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));
const str = (value: unknown): string | null => (typeof value === "string" ? value : null);

/** A row of `SELECT *` as a record; columns this schema version lacks read as null. */
function recordOf(row: Row): TimerRecord {
  return {
    tenantId: String(row.tenant_id),
    serviceCallId: String(row.service_call_id),
    state: row.state as StoredTimerState,
    dueAtMs: num(row.due_at),
    data: str(row.data),
    correlationId: str(row.correlation_id),
    commandTs: Number(row.command_ts),
    generation: Number(row.generation),
    registeredAtMs: Number(row.registered_at),
    reachedAtMs: num(row.reached_at),
    updatedAtMs: Number(row.updated_at),
    repeat: str(row.repeat),
    occurrence: num(row.occurrence),
    attempt: num(row.attempt),
    firedAtMs: num(row.fired_at),
    completedAtMs: num(row.completed_at),
    result: str(row.result),
    lastReason: str(row.last_reason),
    createdBy: str(row.created_by),
    createdVia: str(row.created_via),
    traceId: str(row.trace_id),
  };
}

/**
 * One state's slice of the tenant's timers in (due_at, service_call_id) order: $1 tenant, $2/$3
 * the position the scan starts after (scanStartOf: the cursor or dueAfter), $4 dueBefore
 * (exclusive), $5 limit. Key columns are COLLATE "C", so the order is by code point as in SQLite.
 */
function scanBranch(state: string): string {
  return `(SELECT state, due_at AS "dueAtMs", service_call_id AS "serviceCallId" FROM timer_schedules
    WHERE tenant_id = $1 AND state = '${state}' AND (due_at, service_call_id) > ($2::bigint, $3::text) AND due_at < $4
    ORDER BY due_at, service_call_id LIMIT $5)`;
}

/**
 * Newest changes first: one of the (…, updated_at, service_call_id) indexes walked backwards from
 * the cursor ($2/$3) down to changedSince ($4); $5 limit, $6 the state or createdBy.
 */
function scanChanged(by: ChangedIndex["by"], state: StoredTimerState = "Failed"): string {
  // The state inlined as the due scans have it (one of TIMER_STATES): the plan is then made for it.
  const range = by === "state" ? `AND state = '${state}'` : by === "createdBy" ? "AND created_by = $6" : "";
  return `SELECT updated_at AS "updatedAtMs", service_call_id AS "serviceCallId" FROM timer_schedules
    WHERE tenant_id = $1 ${range} AND (updated_at, service_call_id) < ($2::bigint, $3::text) AND updated_at >= $4
    ORDER BY updated_at DESC, service_call_id DESC LIMIT $5`;
}

export const POSTGRES_QUERY_SQL = {
  // The chart of what is coming: bounded walks of the Scheduled slice, index only. $1 tenant,
  // $2 from, $3 bucket length, $4 window end, $5 cap + 1.
  dueBuckets: `SELECT ((due_at - $2) / $3)::int AS bucket, count(*)::int AS count FROM (
      SELECT due_at FROM timer_schedules WHERE tenant_id = $1 AND state = 'Scheduled' AND due_at >= $2 AND due_at < $4
      ORDER BY due_at LIMIT $5) w
    GROUP BY 1`,
  overdueCount: `SELECT count(*)::int AS count FROM (
      SELECT 1 FROM timer_schedules WHERE tenant_id = $1 AND state = 'Scheduled' AND due_at < $2 LIMIT $3) o`,
  scanChangedByTenant: scanChanged("tenant"),
  scanChangedByState: scanChanged("state"),
  scanChangedByCreatedBy: scanChanged("createdBy"),
  get: "SELECT * FROM timer_schedules WHERE tenant_id = $1 AND service_call_id = $2",
  getWithHistory: `SELECT t.*, ${HISTORY_COLUMN} FROM timer_schedules t WHERE tenant_id = $1 AND service_call_id = $2`,
  fetch: "SELECT * FROM timer_schedules WHERE tenant_id = $1 AND service_call_id = ANY($2::text[])",
  scanOneState: scanBranch("Scheduled"),
  scanAllStates: `SELECT * FROM (${TIMER_STATES.map(scanBranch).join(" UNION ALL ")}) s ORDER BY "dueAtMs", "serviceCallId" LIMIT $5`,
  // Kept by statement-level triggers (drizzle/postgres/0002_state_counts.sql) in a row per writing
  // backend and (tenant, state): a few rows, not the tenant's rows.
  countByState: `
    SELECT state, sum(count)::float8 AS count, sum(duration_sum_ms)::float8 AS "durationSumMs",
      sum(duration_count)::float8 AS "durationCount"
    FROM timer_state_counts WHERE tenant_id = $1 GROUP BY state`,
  nextDue: `SELECT min(due_at) AS "dueAtMs" FROM timer_schedules WHERE tenant_id = $1 AND state = 'Scheduled'`,
  tenants: `
    WITH RECURSIVE tenants(tenant_id) AS (
      SELECT min(tenant_id) FROM timer_schedules
      UNION ALL
      SELECT (SELECT min(t.tenant_id) FROM timer_schedules t WHERE t.tenant_id > tenants.tenant_id) FROM tenants WHERE tenant_id IS NOT NULL
    )
    SELECT tenant_id AS "tenantId" FROM tenants WHERE tenant_id IS NOT NULL LIMIT $1`,
} as const;

/**
 * TimerQueries on Postgres, through a pool whose search_path names the store's schema (see
 * createPostgresPool). Statements are the ones of SqliteTimerQueries, served by the same indexes;
 * `stats` sums the counters that migration 0002 keeps.
 */
export class PostgresTimerQueries implements TimerQueries {
  constructor(private readonly pool: pg.Pool) {}

  async get(key: TimerKey, options?: { readonly history?: boolean }): Promise<TimerRecord | undefined> {
    const history = options?.history === true;
    const { rows } = await this.pool.query<Row>({
      name: history ? "timer-query-get-with-history" : "timer-query-get",
      text: history ? POSTGRES_QUERY_SQL.getWithHistory : POSTGRES_QUERY_SQL.get,
      values: [key.tenantId, key.serviceCallId],
    });
    const row = rows[0];
    if (row === undefined) return undefined;
    return history ? { ...recordOf(row), history: str(row.history) } : recordOf(row);
  }

  async list(query: TimerListQuery): Promise<TimerPage> {
    const { tenantId, state } = query;
    const start = scanStartOf(query);
    return listByKeyset(
      query,
      async (scanLimit) => {
        const values = [tenantId, start.dueAtMs, start.serviceCallId, query.dueBeforeMs ?? NO_UPPER_BOUND, scanLimit];
        const text = state === undefined ? POSTGRES_QUERY_SQL.scanAllStates : scanBranch(state);
        const { rows } = await this.pool.query<ScannedKey>({ name: `timer-query-scan-${state ?? "all"}`, text, values });
        return rows.map((row) => ({ ...row, dueAtMs: Number(row.dueAtMs) }));
      },
      async (ids) => {
        const { rows } = await this.pool.query<Row>({ name: "timer-query-fetch", text: POSTGRES_QUERY_SQL.fetch, values: [tenantId, ids] });
        return rows.map(recordOf);
      },
    );
  }

  async listChanged(query: TimerListQuery): Promise<ChangedPage> {
    const { tenantId } = query;
    return listByChanged(
      query,
      async ({ index, before, sinceMs, scanLimit }) => {
        const values: unknown[] = [tenantId, before.updatedAtMs, before.serviceCallId, sinceMs, scanLimit];
        if (index.by === "createdBy") values.push(index.createdBy);
        const state = index.by === "state" ? (index.state as StoredTimerState) : undefined;
        const { rows } = await this.pool.query<ChangedKey>({
          name: `timer-query-changed-${index.by}${state === undefined ? "" : `-${state}`}`,
          text: scanChanged(index.by, state),
          values,
        });
        return rows.map((row) => ({ ...row, updatedAtMs: Number(row.updatedAtMs) }));
      },
      async (ids) => {
        const { rows } = await this.pool.query<Row>({ name: "timer-query-fetch", text: POSTGRES_QUERY_SQL.fetch, values: [tenantId, ids] });
        return rows.map(recordOf);
      },
    );
  }

  async dueHistogram(query: DueHistogramQuery): Promise<DueHistogram> {
    const { tenantId, fromMs, bucketMs, cap } = query;
    const [buckets, overdue] = await Promise.all([
      this.pool.query<{ bucket: number; count: number }>({
        name: "timer-query-due-buckets",
        text: POSTGRES_QUERY_SQL.dueBuckets,
        values: [tenantId, fromMs, bucketMs, windowEndOf(query), cap + 1],
      }),
      this.pool.query<{ count: number }>({
        name: "timer-query-overdue",
        text: POSTGRES_QUERY_SQL.overdueCount,
        values: [tenantId, fromMs, cap + 1],
      }),
    ]);
    return histogramOf(query, overdue.rows[0]?.count ?? 0, buckets.rows);
  }

  async stats(tenantId: string): Promise<TimerCounts> {
    const byState = Object.fromEntries(TIMER_STATES.map((s) => [s, 0])) as Record<StoredTimerState, number>;
    const [counts, next] = await Promise.all([
      this.pool.query<{ state: StoredTimerState; count: number; durationSumMs: number; durationCount: number }>({
        name: "timer-query-count",
        text: POSTGRES_QUERY_SQL.countByState,
        values: [tenantId],
      }),
      this.pool.query<{ dueAtMs: number | null }>({ name: "timer-query-next-due", text: POSTGRES_QUERY_SQL.nextDue, values: [tenantId] }),
    ]);
    let avgDurationMs: number | null = null;
    for (const { state, count, durationSumMs, durationCount } of counts.rows) {
      byState[state] = count;
      if (state === "Completed" && durationCount > 0) avgDurationMs = durationSumMs / durationCount;
    }
    return { byState, nextDueAtMs: num(next.rows[0]?.dueAtMs), avgDurationMs };
  }

  async tenants(limit: number): Promise<string[]> {
    const { rows } = await this.pool.query<{ tenantId: string }>({
      name: "timer-query-tenants",
      text: POSTGRES_QUERY_SQL.tenants,
      values: [limit],
    });
    return rows.map((row) => row.tenantId);
  }
}
