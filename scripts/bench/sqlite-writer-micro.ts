/**
 * A component benchmark of the writer thread's share of a command batch, in process on one thread:
 * `SqliteWriter.applyCommands` (BEGIN IMMEDIATE, a read per key, the domain's decisions, the upsert
 * of each changed timer, COMMIT) on the service's connection settings, for new keys at random. It
 * isolates what the writer thread spends per command, which the end-to-end `ingest` scenario cannot.
 *
 *   npx tsx scripts/bench/sqlite-writer-micro.ts [--commands 100000] [--batch 2000] [--rounds 3] [--synchronous FULL]
 *     [--history 20] [--reschedule 0.5]
 *
 * `--history N` keeps N entries per timer (TIMER_HISTORY_ENTRIES); `--reschedule S` sends that share
 * of the commands to 10 timers per tenant over 100 tenants, as the end-to-end `historyCost` does, so
 * that their histories fill and drop their oldest.
 *
 * `MICRO_SQL='…'` runs that SQL on each fresh store first, for what-ifs such as
 * `DROP INDEX timer_schedules_tenant_updated_idx`. Prints µs of CPU per command; one JSON line on stdout.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import { openSqliteConnection } from "../../src/adapters/sqlite/sqlite-connection.js";
import { SqliteWriter } from "../../src/adapters/sqlite/sqlite-writer.js";
import type { ScheduleTimerCommand } from "../../src/domain/timer-command.js";
import { prng, round } from "./harness.js";

const args = process.argv.slice(2);
const arg = (name: string, fallback: string): string => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const COMMANDS = Number(arg("--commands", "100000"));
const BATCH = Number(arg("--batch", "2000"));
const ROUNDS = Number(arg("--rounds", "3"));
const SYNCHRONOUS = arg("--synchronous", "FULL") as "FULL" | "NORMAL";
const HISTORY = Number(arg("--history", "0"));
const RESCHEDULE = Number(arg("--reschedule", "0"));

const cpuUs = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

function scheduleCommands(seed: number): ScheduleTimerCommand[] {
  const random = prng(seed);
  const now = Date.now();
  const base = now + 7 * 86_400_000;
  const trace = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", traceFlags: 1, traceState: null, spanId: null };
  return Array.from({ length: COMMANDS }, (_, i) => ({
    kind: "schedule",
    tenantId: RESCHEDULE > 0 ? `hist-${String(i % 100).padStart(3, "0")}` : "bench",
    serviceCallId:
      random() < RESCHEDULE ? `hot-${Math.floor(random() * 10)}` : `t-${String(Math.floor(random() * 1_000_000)).padStart(8, "0")}-${i}`,
    dueAtMs: base + Math.floor(random() * 86_400_000),
    data: null,
    correlationId: null,
    timestampMs: now - COMMANDS + i,
    repeat: null,
    maxLatenessMs: null,
    trace,
  }));
}

const results = [];
for (let r = 0; r < ROUNDS; r++) {
  const dir = mkdtempSync(join(tmpdir(), "writer-micro-"));
  const path = join(dir, "timer.db");
  await (await openSqliteTimerStore({ path })).close();
  const db = openSqliteConnection(path, { synchronous: SYNCHRONOUS });
  if (process.env.MICRO_SQL) db.exec(process.env.MICRO_SQL);
  const writer = new SqliteWriter(db);
  const now = Date.now();
  const commands = scheduleCommands(r + 1);
  const start = cpuUs();
  // The writer's whole share of each batch: the transaction, the reads, the decisions, the writes, the commit.
  for (let at = 0; at < commands.length; at += BATCH)
    writer.applyCommands(commands.slice(at, at + BATCH), { nowMs: now, historyEntries: HISTORY }, now);
  const totalUs = cpuUs() - start;
  writer.close();
  rmSync(dir, { recursive: true, force: true });
  const per = (us: number): number => round(us / COMMANDS, 2);
  const result = { round: r, totalUs: per(totalUs) };
  console.error(`round ${r}: ${result.totalUs} µs per command`);
  results.push(result);
}
console.log(
  JSON.stringify({
    commands: COMMANDS,
    batch: BATCH,
    synchronous: SYNCHRONOUS,
    history: HISTORY,
    reschedule: RESCHEDULE,
    sql: process.env.MICRO_SQL ?? null,
    results,
  }),
);
