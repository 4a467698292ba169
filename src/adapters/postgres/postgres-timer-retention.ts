import type pg from "pg";
import type { TimerRetention } from "../../app/retention/timer-retention.js";
import { FINAL_STATES } from "../../domain/retention.js";
import type { TimerKey } from "../../domain/timer.js";
import { inTransaction } from "./postgres-pool.js";
import { deleteHistories } from "./postgres-timer-history.js";

const FINAL = `state IN (${FINAL_STATES.map((s) => `'${s}'`).join(", ")})`;

export const POSTGRES_RETENTION_SQL = {
  /**
   * $1 cutoff, $2 limit. The outer WHERE repeats the condition: a row that a command re-armed
   * after the inner SELECT read it is re-checked (EvalPlanQual) and kept. SKIP LOCKED leaves rows
   * that a command batch holds to a later sweep instead of waiting for it. Returns the keys, whose
   * histories go next.
   */
  deleteFinalTimers: `
    DELETE FROM timer_schedules t
    USING (
      SELECT tenant_id, service_call_id FROM timer_schedules
      WHERE ${FINAL} AND updated_at < $1
      ORDER BY updated_at LIMIT $2
      FOR UPDATE SKIP LOCKED
    ) d
    WHERE t.tenant_id = d.tenant_id AND t.service_call_id = d.service_call_id AND t.${FINAL} AND t.updated_at < $1
    RETURNING t.tenant_id AS "tenantId", t.service_call_id AS "serviceCallId"`,
  deletePrefixCancels: `
    DELETE FROM timer_prefix_cancels t
    USING (
      SELECT tenant_id, service_call_id_prefix FROM timer_prefix_cancels
      WHERE updated_at < $1 AND progress_key IS NULL
      LIMIT $2
      FOR UPDATE SKIP LOCKED
    ) d
    WHERE t.tenant_id = d.tenant_id AND t.service_call_id_prefix = d.service_call_id_prefix AND t.updated_at < $1`,
  prefixCancelsTable: `
    SELECT count(*)::integer AS columns FROM information_schema.columns
    WHERE table_schema = current_schema() AND table_name = 'timer_prefix_cancels' AND column_name IN ('updated_at', 'progress_key')`,
} as const;

/** Retention on Postgres; several instances may sweep at once (SKIP LOCKED splits the rows). */
export class PostgresTimerRetention implements TimerRetention {
  #hasPrefixCancels: Promise<boolean> | undefined;

  constructor(private readonly pool: pg.Pool) {}

  /**
   * The timers, then their histories, in one transaction. Two statements: the second's snapshot,
   * taken after the first holds the deleted rows, sees an entry a command appended to one of them
   * and committed while the first ran (a command on a final timer locks its row and changes nothing).
   */
  async deleteFinalTimers(cutoffMs: number, limit: number): Promise<number> {
    return inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<TimerKey>({
        name: "timer-retention-timers",
        text: POSTGRES_RETENTION_SQL.deleteFinalTimers,
        values: [cutoffMs, limit],
      });
      await deleteHistories(client, rows);
      return rows.length;
    });
  }

  /** 0 while the schema has no prefix-cancel table (CONTRACT §10) yet. */
  async deletePrefixCancels(cutoffMs: number, limit: number): Promise<number> {
    this.#hasPrefixCancels ??= this.pool
      .query<{ columns: number }>(POSTGRES_RETENTION_SQL.prefixCancelsTable)
      .then(({ rows }) => rows[0]?.columns === 2);
    if (!(await this.#hasPrefixCancels)) return 0;
    const { rowCount } = await this.pool.query({
      name: "timer-retention-prefix-cancels",
      text: POSTGRES_RETENTION_SQL.deletePrefixCancels,
      values: [cutoffMs, limit],
    });
    return rowCount ?? 0;
  }
}
