/**
 * Export and import rates and peak RSS of a move from SQLite to Postgres (CONTRACT §18,
 * docs/operations/move-to-postgres.md): a SQLite store of N timers in a realistic mix of states is
 * exported with `timer-service export`, and the file imported into a fresh Postgres schema with
 * `timer-service import`, each as its own process under /usr/bin/time (peak RSS of the process).
 * Then a second import of the same file (everything kept), the Postgres export, and
 * `timer-service backup` of the SQLite store.
 *
 *   npx tsx scripts/bench/transfer.ts [--count 1000000] [--database-url postgres://…]
 *
 * Needs `npm run build` first (it runs dist/cli/main.js). Prints one JSON object on stdout.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { openSqliteTimerTransfer } from "../../src/adapters/sqlite/sqlite-timer-transfer.js";
import type { TransferRecord } from "../../src/app/transfer/timer-transfer.js";
import type { Timer } from "../../src/domain/timer.js";

const { values } = parseArgs({
  options: { count: { type: "string", default: "1000000" }, "database-url": { type: "string" } },
});
const count = Number(values.count);
const databaseUrl = values["database-url"] ?? process.env.TIMER_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const CLI = resolve(import.meta.dirname, "../../dist/cli/main.js");
const folder = mkdtempSync(join(tmpdir(), "bench-transfer-"));
const schema = `bench_transfer_${process.pid}`;
const log = (message: string) => process.stderr.write(`[transfer] ${message}\n`);

/** Timer i of the store: 100 tenants; 70 % one-shot Scheduled with data, 10 % recurring, 10 % Reached, 5 % Cancelled, 5 % Fired. */
function timerAt(i: number, nowMs: number): Timer {
  const kind = i % 20;
  const base = {
    tenantId: `tenant-${i % 100}`,
    serviceCallId: `order-${String(i).padStart(9, "0")}`,
    state: "Scheduled" as Timer["state"],
    dueAtMs: nowMs + 86_400_000 + (i % 1_000_000) * 1_000,
    data: `{"order":${i},"customer":"c-${i % 5000}","amount":${(i % 997) * 3}}`,
    correlationId: `req-${i}`,
    commandTs: nowMs - 1_000 + (i % 1000),
    generation: 1,
    registeredAtMs: nowMs - 60_000,
    reachedAtMs: null,
    updatedAtMs: nowMs - 60_000,
    repeat: null,
    occurrence: 1,
    maxLatenessMs: null,
  };
  if (kind < 14) return base;
  if (kind < 16)
    return {
      ...base,
      repeat: { everyMs: 3_600_000, untilMs: null, maxOccurrences: null, firstDueAtMs: base.dueAtMs - 3_600_000 * 4 },
      occurrence: 5,
    };
  if (kind < 18) return { ...base, state: "Reached", dueAtMs: nowMs - 3_600_000, reachedAtMs: nowMs - 3_599_000 };
  if (kind < 19) return { ...base, state: "Cancelled" };
  const delivery = { maxRetries: 3, backoffMs: 5_000, completionTimeoutMs: 300_000 };
  return {
    ...base,
    state: "Fired",
    dueAtMs: nowMs - 1_000,
    reachedAtMs: nowMs - 900,
    delivery,
    attempt: 1,
    firedAtMs: nowMs - 900,
    deadlineAtMs: nowMs + 299_100,
  };
}

/** Fills the SQLite store through the transfer adapter (its own import path, tallies and all), 10,000 a transaction. */
async function populate(path: string): Promise<number> {
  const started = performance.now();
  const transfer = openSqliteTimerTransfer({ path, create: true });
  const nowMs = Date.now();
  try {
    for (let from = 0; from < count; from += 10_000) {
      const batch: TransferRecord[] = [];
      for (let i = from; i < Math.min(count, from + 10_000); i++) batch.push({ kind: "timer", timer: timerAt(i, nowMs) });
      await transfer.importBatch(batch);
    }
  } finally {
    await transfer.close();
  }
  return (performance.now() - started) / 1000;
}

interface Measured {
  readonly seconds: number;
  readonly peakRssMB: number;
  /** User + system CPU of the process: what the work costs, whatever else the machine runs. */
  readonly cpuSeconds: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI under /usr/bin/time: wall time and the process's peak RSS. */
function measure(args: string[], env: Record<string, string>): Measured {
  const started = performance.now();
  const result = spawnSync("/usr/bin/time", ["-f", "peak-rss-kb=%M cpu-s=%U+%S", process.execPath, CLI, ...args], {
    env: { ...process.env, ...env },
    encoding: "utf8",
    maxBuffer: 1024 * 1024 * 64,
  });
  const seconds = (performance.now() - started) / 1000;
  if (result.status !== 0) throw new Error(`timer-service ${args.join(" ")} failed: ${result.stderr}`);
  const rss = /peak-rss-kb=(\d+)/.exec(result.stderr);
  const cpu = /cpu-s=([\d.]+)\+([\d.]+)/.exec(result.stderr);
  return {
    seconds,
    peakRssMB: rss === null ? NaN : Math.round(Number(rss[1]) / 1024),
    cpuSeconds: cpu === null ? NaN : Number(cpu[1]) + Number(cpu[2]),
    stdout: result.stdout,
    stderr: result.stderr,
  };
}

const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;

async function main(): Promise<void> {
  const sqlitePath = join(folder, "timer.db");
  const file = join(folder, "export.ndjson");
  const sqliteEnv = { TIMER_STORE: "sqlite", TIMER_DB_PATH: sqlitePath };
  const postgresEnv = { TIMER_STORE: "postgres", TIMER_DATABASE_URL: databaseUrl, TIMER_DATABASE_SCHEMA: schema };
  try {
    log(`populating ${count} timers in ${sqlitePath}`);
    const populateSeconds = await populate(sqlitePath);
    log(`populated in ${round(populateSeconds)} s; exporting`);
    const exported = measure(["export", "--out", file], sqliteEnv);
    const fileMB = statSync(file).size / 1024 / 1024;
    log(`exported in ${round(exported.seconds)} s (${round(fileMB)} MB); importing into Postgres schema ${schema}`);
    const imported = measure(["import", "--in", file], postgresEnv);
    log(`imported in ${round(imported.seconds)} s: ${imported.stdout.trim()}`);
    const again = measure(["import", "--in", file], postgresEnv);
    log(`imported again in ${round(again.seconds)} s: ${again.stdout.trim()}`);
    const postgresFile = join(folder, "postgres.ndjson");
    const postgresExport = measure(["export", "--out", postgresFile], postgresEnv);
    const backup = measure(["backup", "--out", join(folder, "backup.db")], sqliteEnv);
    log(`backed up in ${round(backup.seconds)} s`);
    const same =
      readFileSync(file, "utf8").split("\n").slice(1).join("\n") === readFileSync(postgresFile, "utf8").split("\n").slice(1).join("\n");
    // Wall time shares the machine with whatever else runs; CPU seconds are the work's own cost.
    const figures = (m: Measured) => ({
      seconds: round(m.seconds),
      timersPerSec: Math.round(count / m.seconds),
      cpuSeconds: round(m.cpuSeconds),
      timersPerCpuSec: Math.round(count / m.cpuSeconds),
      peakRssMB: m.peakRssMB,
    });
    process.stdout.write(
      `${JSON.stringify({
        timers: count,
        fileMB: round(fileMB),
        sqliteDbMB: round(statSync(sqlitePath).size / 1024 / 1024),
        exportSqlite: figures(exported),
        importPostgres: { ...figures(imported), counts: JSON.parse(imported.stdout) as unknown },
        reimportPostgres: figures(again),
        exportPostgres: figures(postgresExport),
        backupSqlite: figures(backup),
        postgresExportEqualsSqliteExport: same,
        nodeVersion: process.version,
        cpus: Number(execFileSync("nproc", { encoding: "utf8" }).trim()),
      })}\n`,
    );
  } finally {
    rmSync(folder, { recursive: true, force: true });
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  }
}

await main();
