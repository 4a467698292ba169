import type Database from "better-sqlite3";
import type { TimerRetention } from "../../app/retention/timer-retention.js";
import { FINAL_STATES } from "../../domain/retention.js";
import type { BatchTallies, TalliedRow } from "./batch-tallies.js";
import type { SqliteTimerHistory } from "./sqlite-timer-history.js";

// Spelt exactly as the WHERE of the partial index timer_schedules_final_updated_idx, so the planner
// matches that index when the statement is prepared.
const FINAL = `state IN (${FINAL_STATES.map((s) => `'${s}'`).join(", ")})`;

/**
 * The statements, exported for the EXPLAIN QUERY PLAN checks of the tests. `LIMIT +@limit`: a bare
 * bound LIMIT would re-prepare the statement at every run (see sqlite-timer-statements.ts).
 */
export const SQLITE_RETENTION_SQL = {
  deleteFinalTimers: `
    DELETE FROM timer_schedules
    WHERE (tenant_id, service_call_id) IN (
      SELECT tenant_id, service_call_id FROM timer_schedules
      WHERE ${FINAL} AND updated_at < @cutoffMs
      ORDER BY updated_at LIMIT +@limit)
    RETURNING tenant_id AS tenantId, service_call_id AS serviceCallId, state, fired_at AS firedAtMs, completed_at AS completedAtMs`,
  // Prefix cancels still cancelling (progress_key set) stay. The table has one row per tenant and
  // prefix and no index on updated_at: this reads it whole (see docs/design/messages.md).
  deletePrefixCancels: `
    DELETE FROM timer_prefix_cancels
    WHERE (tenant_id, service_call_id_prefix) IN (
      SELECT tenant_id, service_call_id_prefix FROM timer_prefix_cancels
      WHERE updated_at < @cutoffMs AND progress_key IS NULL
      LIMIT +@limit)`,
} as const;

/**
 * Retention on the service's SQLite connection: each call is one short write transaction deleting
 * the oldest-changed `limit` final rows, found through timer_schedules_final_updated_idx (so the
 * cost is the batch, not the table). WITHOUT ROWID tables have no rowid, hence the key IN (…).
 * The deleted rows come back (RETURNING) for the writer's tallies, in the same transaction.
 */
export class SqliteTimerRetention implements TimerRetention {
  readonly #deleteTimers: (cutoffMs: number, limit: number) => number;
  readonly #deletePrefixCancels: Database.Statement<[{ cutoffMs: number; limit: number }]>;

  constructor(db: Database.Database, tallies: BatchTallies, history: SqliteTimerHistory) {
    const deleteTimers = db.prepare<[{ cutoffMs: number; limit: number }], TalliedRow & { serviceCallId: string }>(
      SQLITE_RETENTION_SQL.deleteFinalTimers,
    );
    this.#deleteTimers = tallies.transaction(db, (cutoffMs: number, limit: number) => {
      const deleted = deleteTimers.all({ cutoffMs, limit });
      for (const row of deleted) tallies.changed(row, undefined);
      history.deleteOf(deleted);
      return deleted.length;
    }).immediate;
    this.#deletePrefixCancels = db.prepare(SQLITE_RETENTION_SQL.deletePrefixCancels);
  }

  async deleteFinalTimers(cutoffMs: number, limit: number): Promise<number> {
    return this.deleteFinalTimersNow(cutoffMs, limit);
  }

  async deletePrefixCancels(cutoffMs: number, limit: number): Promise<number> {
    return this.deletePrefixCancelsNow(cutoffMs, limit);
  }

  /** The same without the promise, for the writer thread (which answers in order). */
  deleteFinalTimersNow(cutoffMs: number, limit: number): number {
    return this.#deleteTimers(cutoffMs, limit);
  }

  deletePrefixCancelsNow(cutoffMs: number, limit: number): number {
    return this.#deletePrefixCancels.run({ cutoffMs, limit }).changes;
  }
}
