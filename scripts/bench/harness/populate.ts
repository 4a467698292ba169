import Database from "better-sqlite3";
import pg from "pg";
import { type TimerServiceProcess } from "../../../test/support/timer-service-process.js";
import { callId } from "./bench-client.js";
import type { BenchContext } from "./context.js";
import { log, round } from "./log.js";
import { stopService } from "./processes.js";
import { recountTallies } from "../../../src/adapters/sqlite/batch-tallies.js";

// Direct SQLite population (the service is stopped meanwhile)

/**
 * Inserts `count` Scheduled timers straight into the service's database, in big transactions.
 * The database must already exist (run the service once so that its migrations created the
 * table). The column list is read from the table, so added nullable columns are fine; a new
 * NOT NULL column without default stops the bench with a clear message instead of guessing.
 */
export function populateScheduled(
  dbPath: string,
  options: { count: number; tenantId: string; idPrefix: string; dueAtMs: (i: number) => number; label: string },
): { seconds: number; rowsPerSec: number; dbSizeMB: number } {
  const t0 = performance.now();
  const db = new Database(dbPath);
  try {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = OFF");
    db.pragma("cache_size = -262144"); // 256 MiB for the bulk load only
    const columns = db.prepare("PRAGMA table_info(timer_schedules)").all() as {
      name: string;
      notnull: number;
      dflt_value: unknown;
      pk: number;
    }[];
    if (columns.length === 0) throw new Error(`${dbPath} has no table timer_schedules: did the service migrate it?`);
    const nowMs = Date.now();
    const known: Record<string, (i: number) => unknown> = {
      tenant_id: () => options.tenantId,
      service_call_id: (i) => callId(options.idPrefix, i),
      state: () => "Scheduled",
      due_at: options.dueAtMs,
      data: () => null,
      correlation_id: () => null,
      command_ts: () => nowMs,
      registered_at: () => nowMs,
      reached_at: () => null,
      updated_at: () => nowMs,
    };
    const used = columns.filter((c) => c.name in known);
    const unknownRequired = columns.filter((c) => !(c.name in known) && c.notnull === 1 && c.dflt_value === null);
    if (unknownRequired.length > 0) {
      throw new Error(
        `timer_schedules has NOT NULL columns the bench does not know (${unknownRequired.map((c) => c.name).join(", ")}); update populateScheduled in scripts/bench/harness.ts`,
      );
    }
    const otherTables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[])
      .map((t) => t.name)
      .filter((name) => name !== "timer_schedules" && !name.startsWith("__drizzle") && !name.startsWith("sqlite_"));
    if (otherTables.length > 0)
      log(`${options.label}: note: the database also has tables ${otherTables.join(", ")}; the bench fills only timer_schedules`);
    const insert = db.prepare(
      `INSERT INTO timer_schedules (${used.map((c) => c.name).join(", ")}) VALUES (${used.map(() => "?").join(", ")})`,
    );
    const getters = used.map((c) => known[c.name]!);
    const insertRange = db.transaction((from: number, to: number) => {
      for (let i = from; i < to; i++) insert.run(...getters.map((get) => get(i)));
    });
    const chunk = 100_000;
    let lastLog = performance.now();
    for (let from = 0; from < options.count; from += chunk) {
      insertRange(from, Math.min(options.count, from + chunk));
      if (performance.now() - lastLog > 5_000) {
        log(`${options.label}: ${Math.min(options.count, from + chunk)}/${options.count} rows inserted`);
        lastLog = performance.now();
      }
    }
    // Rows written around the store: its counts and due tenants are recounted (a file of this release).
    if (otherTables.includes("timer_state_counts") && otherTables.includes("timer_due_tenants")) db.transaction(() => recountTallies(db))();
    db.pragma("wal_checkpoint(TRUNCATE)");
    const pages = db.pragma("page_count", { simple: true }) as number;
    const pageSize = db.pragma("page_size", { simple: true }) as number;
    const seconds = (performance.now() - t0) / 1000;
    return { seconds: round(seconds, 1), rowsPerSec: Math.round(options.count / seconds), dbSizeMB: round((pages * pageSize) / 1048576) };
  } finally {
    db.close();
  }
}

/** Stops the service, inserts rows into its database (SQLite file or Postgres schema); returns timings. */
export async function withRowsInserted(
  ctx: BenchContext,
  service: TimerServiceProcess,
  options: Parameters<typeof populateScheduled>[1],
): Promise<{ populate: ReturnType<typeof populateScheduled> }> {
  await stopService(service);
  const { TIMER_STORE, TIMER_DATABASE_URL, TIMER_DATABASE_SCHEMA, TIMER_DB_PATH } = service.env;
  const postgres = TIMER_STORE === "postgres";
  ctx.log(`inserting ${options.count} Scheduled rows into ${postgres ? `Postgres schema ${TIMER_DATABASE_SCHEMA}` : TIMER_DB_PATH}`);
  const populate = postgres
    ? await populatePostgresScheduled(TIMER_DATABASE_URL!, TIMER_DATABASE_SCHEMA!, options)
    : populateScheduled(TIMER_DB_PATH!, options);
  ctx.log(`inserted ${options.count} rows in ${populate.seconds} s (${populate.dbSizeMB} MB)`);
  return { populate };
}

/**
 * populateScheduled for a Postgres store: the same rows, in batches of 10,000 (`unnest` of arrays),
 * through the table's triggers like any write, then `VACUUM ANALYZE` (a table that has settled).
 */
async function populatePostgresScheduled(
  url: string,
  schema: string,
  options: Parameters<typeof populateScheduled>[1],
): Promise<ReturnType<typeof populateScheduled>> {
  const t0 = performance.now();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`SET search_path TO ${schema}`);
    const nowMs = Date.now();
    const batch = 10_000;
    let lastLog = performance.now();
    for (let from = 0; from < options.count; from += batch) {
      const to = Math.min(options.count, from + batch);
      const ids: string[] = [];
      const dues: number[] = [];
      for (let i = from; i < to; i++) {
        ids.push(callId(options.idPrefix, i));
        dues.push(options.dueAtMs(i));
      }
      await client.query(
        `INSERT INTO timer_schedules (tenant_id, service_call_id, state, due_at, command_ts, registered_at, updated_at)
         SELECT $1, id, 'Scheduled', due, $4, $4, $4 FROM unnest($2::text[], $3::bigint[]) AS u(id, due)`,
        [options.tenantId, ids, dues, nowMs],
      );
      if (performance.now() - lastLog > 5_000) {
        log(`${options.label}: ${to}/${options.count} rows inserted`);
        lastLog = performance.now();
      }
    }
    await client.query("VACUUM ANALYZE timer_schedules");
    const { rows } = await client.query<{ bytes: string }>("SELECT pg_total_relation_size('timer_schedules') AS bytes");
    const seconds = (performance.now() - t0) / 1000;
    return {
      seconds: round(seconds, 1),
      rowsPerSec: Math.round(options.count / seconds),
      dbSizeMB: round(Number(rows[0]!.bytes) / 1048576),
    };
  } finally {
    await client.end();
  }
}
