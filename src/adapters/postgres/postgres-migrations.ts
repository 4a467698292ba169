import { fileURLToPath } from "node:url";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import type pg from "pg";

// src/adapters/postgres/ and dist/adapters/postgres/ are both three levels below the package root.
export const DEFAULT_POSTGRES_MIGRATIONS_FOLDER = fileURLToPath(new URL("../../../drizzle/postgres", import.meta.url));

/**
 * Folds the counter rows of backends that have ended into slot 0 (drizzle/postgres/0002_state_counts.sql:
 * each backend adds into rows of its own pid, so that concurrent transactions never share one). Only
 * rows of pids absent from pg_stat_activity move; a live backend's rows are never touched, and a new
 * backend that reuses a pid after its fold starts a fresh row.
 */
export const FOLD_ENDED_BACKEND_COUNTS = `
  WITH ended AS (
    DELETE FROM timer_state_counts c
    WHERE c.slot <> 0 AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = c.slot)
    RETURNING tenant_id, state, count, duration_sum_ms, duration_count
  )
  INSERT INTO timer_state_counts AS c (tenant_id, state, slot, count, duration_sum_ms, duration_count)
  SELECT tenant_id, state, 0, sum(count), sum(duration_sum_ms), sum(duration_count) FROM ended GROUP BY tenant_id, state
  ON CONFLICT (tenant_id, state, slot) DO UPDATE SET
    count = c.count + excluded.count,
    duration_sum_ms = c.duration_sum_ms + excluded.duration_sum_ms,
    duration_count = c.duration_count + excluded.duration_count`;

/**
 * Creates `schema` when missing and applies drizzle-kit's migrations to it, recording them in
 * `schema.__drizzle_migrations`. Instances starting at once against one database take turns on a
 * session advisory lock (one per schema), so each migration runs once and the others find it done;
 * the lock goes with the connection should the process die meanwhile. Then folds the counter rows of
 * ended backends (FOLD_ENDED_BACKEND_COUNTS).
 */
export async function migratePostgres(pool: pg.Pool, schema: string, migrationsFolder = DEFAULT_POSTGRES_MIGRATIONS_FOLDER): Promise<void> {
  const client = await pool.connect();
  try {
    // Waiting for another instance's migrations, and a migration of a large table, may outlast
    // TIMER_DATABASE_TIMEOUT_MS: this start-up connection runs without the time-outs, and is closed after.
    await client.query("SET statement_timeout = 0; SET idle_in_transaction_session_timeout = 0");
    (client as unknown as { connectionParameters: { query_timeout: number } }).connectionParameters.query_timeout = 0;
    // The two-int form keeps this lock apart from any single-bigint advisory lock.
    await client.query("SELECT pg_advisory_lock(hashtext('timer-service:migrate'), hashtext($1))", [schema]);
    try {
      // Migrations name no schema: search_path (set per connection by the pool) puts the tables here.
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await migrate(drizzle({ client }), { migrationsFolder, migrationsSchema: schema, migrationsTable: "__drizzle_migrations" });
      // Under the same lock, so that two instances starting at once fold one after the other. A
      // migrations folder without the counts (tests of upgrades) has nothing to fold.
      const { rows } = await client.query<{ exists: boolean }>("SELECT to_regclass('timer_state_counts') IS NOT NULL AS exists");
      if (rows[0]?.exists === true) await client.query(FOLD_ENDED_BACKEND_COUNTS);
    } finally {
      await client.query("SELECT pg_advisory_unlock(hashtext('timer-service:migrate'), hashtext($1))", [schema]);
    }
  } finally {
    // Closed rather than reused: it runs without time-outs, and one that failed may still hold the lock.
    client.release(true);
  }
}
