import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type pg from "pg";
import type Database from "better-sqlite3";
import type { TimerRecord } from "../../src/app/queries/timer-queries.js";
import { MemoryTimerStore } from "../../src/adapters/memory/memory-timer-store.js";
import { MemoryTimerQueries } from "../../src/adapters/memory/memory-timer-queries.js";
import { MemoryTimerRetention } from "../../src/adapters/memory/memory-timer-retention.js";
import { openSqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import { SqliteTimerQueries } from "../../src/adapters/sqlite/sqlite-timer-queries.js";
import { recountTallies } from "../../src/adapters/sqlite/batch-tallies.js";
import { openPostgresTimerStore } from "../../src/adapters/postgres/postgres-timer-store.js";
import { createPostgresPool } from "../../src/adapters/postgres/postgres-pool.js";
import { PostgresTimerQueries } from "../../src/adapters/postgres/postgres-timer-queries.js";
import { PostgresTimerRetention } from "../../src/adapters/postgres/postgres-timer-retention.js";
import { parseRecurrence } from "../../src/domain/recurrence.js";
import type { Timer } from "../../src/domain/timer.js";
import type { TimerQueriesHarness } from "./timer-queries.contract.js";
import type { PrefixCancelRetentionHarness, TimerRetentionHarness } from "./timer-retention.contract.js";
import { dropSchema, schemaSeries, TEST_DATABASE_URL } from "../support/test-postgres.js";

/** Rows for the query and retention suites, written straight into each store. */
export type QueryHarness = TimerQueriesHarness & TimerRetentionHarness;

/** The same over a store that keeps prefix cancels. */
export type PrefixCancelQueryHarness = TimerQueriesHarness & PrefixCancelRetentionHarness;

const COLUMNS: readonly [string, (r: TimerRecord) => unknown][] = [
  ["tenant_id", (r) => r.tenantId],
  ["service_call_id", (r) => r.serviceCallId],
  ["state", (r) => r.state],
  ["due_at", (r) => r.dueAtMs],
  ["data", (r) => r.data],
  ["correlation_id", (r) => r.correlationId],
  ["command_ts", (r) => r.commandTs],
  ["generation", (r) => r.generation],
  ["registered_at", (r) => r.registeredAtMs],
  ["reached_at", (r) => r.reachedAtMs],
  ["updated_at", (r) => r.updatedAtMs],
];
const V2_COLUMNS: readonly [string, (r: TimerRecord) => unknown][] = [
  ["repeat", (r) => r.repeat],
  ["occurrence", (r) => r.occurrence ?? 1],
  ["attempt", (r) => r.attempt ?? 0],
  ["fired_at", (r) => r.firedAtMs],
  ["completed_at", (r) => r.completedAtMs],
  ["result", (r) => r.result],
  ["last_reason", (r) => r.lastReason],
  ["created_by", (r) => r.createdBy],
  ["created_via", (r) => r.createdVia],
];

export async function memoryHarness(): Promise<QueryHarness> {
  const store = new MemoryTimerStore();
  const seed = async (records: readonly TimerRecord[]) => {
    store.seed(
      records.map(
        (r) =>
          ({
            ...r,
            repeat: r.repeat === null ? null : parseRecurrence(r.repeat),
            occurrence: r.occurrence ?? 1,
            maxLatenessMs: null,
          }) as unknown as Timer,
      ),
    );
  };
  return {
    queries: new MemoryTimerQueries(store),
    retention: new MemoryTimerRetention(store),
    seed,
    cleanup: () => store.close(),
  };
}

export async function sqliteHarness(): Promise<PrefixCancelQueryHarness & { database: Database.Database }> {
  const folder = mkdtempSync(join(tmpdir(), "timer-queries-"));
  const store = await openSqliteTimerStore({ path: join(folder, "timer.db") });
  const db = store.database;
  const columns = [...COLUMNS, ...V2_COLUMNS];
  const insert = db.prepare(
    `INSERT OR REPLACE INTO timer_schedules (${columns.map(([c]) => c).join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
  );
  // Rows written around the store: its tallies are recounted, as a migration would.
  const insertAll = db.transaction((records: readonly TimerRecord[]) => {
    for (const r of records) insert.run(...columns.map(([, pick]) => pick(r)));
    recountTallies(db);
  });
  return {
    database: db,
    queries: new SqliteTimerQueries(db),
    retention: store.retention,
    seed: async (records) => insertAll(records),
    seedPrefixCancel: async (tenantId, prefix, updatedAtMs) => {
      db.prepare(
        "INSERT INTO timer_prefix_cancels (tenant_id, service_call_id_prefix, command_ts, updated_at, progress_key) VALUES (?, ?, ?, ?, NULL)",
      ).run(tenantId, prefix, updatedAtMs, updatedAtMs);
    },
    prefixCancels: async () =>
      (db.prepare("SELECT service_call_id_prefix AS p FROM timer_prefix_cancels ORDER BY p").all() as { p: string }[]).map((r) => r.p),
    cleanup: async () => {
      await store.close();
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

// Each harness gets a schema of its own and drops it; `dropPostgresHarnessSchemas` drops the leftovers of a failed one.
const schemas = schemaSeries("queries");
export const dropPostgresHarnessSchemas = (): Promise<void> => schemas.dropAll();

export async function postgresHarness(): Promise<PrefixCancelQueryHarness & { pool: pg.Pool }> {
  const schema = schemas.next();
  const store = await openPostgresTimerStore({ url: TEST_DATABASE_URL, schema, maxConnections: 1 });
  const pool = createPostgresPool({ url: TEST_DATABASE_URL, schema, maxConnections: 2, timeoutMs: 5_000, onIdleError: () => {} });
  const columns = [...COLUMNS, ...V2_COLUMNS];
  const seed = async (records: readonly TimerRecord[]) => {
    for (let i = 0; i < records.length; i += 500) {
      const chunk = records.slice(i, i + 500);
      const values: unknown[] = [];
      const tuples = chunk.map((r) => `(${columns.map(([, pick]) => `$${values.push(pick(r))}`).join(", ")})`);
      await pool.query(
        `INSERT INTO timer_schedules (${columns.map(([c]) => c).join(", ")}) VALUES ${tuples.join(", ")}
         ON CONFLICT (tenant_id, service_call_id) DO UPDATE SET ${columns.map(([c]) => `${c} = excluded.${c}`).join(", ")}`,
        values,
      );
    }
  };
  return {
    pool,
    queries: new PostgresTimerQueries(pool),
    retention: new PostgresTimerRetention(pool),
    seed,
    seedPrefixCancel: async (tenantId, prefix, updatedAtMs) => {
      await pool.query(
        "INSERT INTO timer_prefix_cancels (tenant_id, service_call_id_prefix, command_ts, updated_at, progress_key) VALUES ($1, $2, $3, $3, NULL)",
        [tenantId, prefix, updatedAtMs],
      );
    },
    prefixCancels: async () =>
      (await pool.query<{ p: string }>("SELECT service_call_id_prefix AS p FROM timer_prefix_cancels ORDER BY p")).rows.map((r) => r.p),
    cleanup: async () => {
      await pool.end();
      await store.close();
      await dropSchema(schema);
    },
  };
}
