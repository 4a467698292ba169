/**
 * A component benchmark of the service's own SQLite store (src/adapters/sqlite, run from source
 * with tsx, in this process, no NATS): what one stored ScheduleTimer costs by transaction size,
 * store size and key order, and what one fired timer costs (findDue + recordFirings). It explains
 * the end-to-end figures of `npm run bench`; it is not one of them.
 *
 *   npx tsx scripts/bench/sqlite-store-micro.ts [--pending 1000000] [--commands 50000]
 *
 * Per case it prints µs of CPU and of wall time per command, and KB written per command through
 * write syscalls (WAL frames and checkpoints; /proc/self/io wchar). One JSON line on stdout.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import type { TimerCommand } from "../../src/domain/timer-command.js";
import { populateScheduled, prng, round } from "./harness.js";

const args = process.argv.slice(2);
const arg = (name: string, fallback: number): number => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : fallback;
};
const PENDING = arg("--pending", 1_000_000);
const ALL_COMMANDS = arg("--commands", 50_000);
const DAY = 86_400_000;

function wchar(): number {
  return Number(/^wchar: (\d+)/m.exec(readFileSync("/proc/self/io", "utf8"))?.[1] ?? 0);
}
function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

interface Case {
  pending: number;
  batch: number;
  keys: "random" | "sequential";
}

async function runCase(dir: string, c: Case, template: string | undefined): Promise<Record<string, unknown>> {
  // one commit per command is slow: fewer of them
  const COMMANDS = c.batch === 1 ? Math.min(ALL_COMMANDS, 5_000) : ALL_COMMANDS;
  const path = join(dir, `case-${c.pending}-${c.batch}-${c.keys}.db`);
  if (template !== undefined) {
    // copy the pre-populated template (checkpointed, so the .db file is complete)
    const { copyFileSync } = await import("node:fs");
    copyFileSync(template, path);
  }
  const store = await openSqliteTimerStore({ path, synchronous: "NORMAL" });
  const random = prng(c.batch * 7 + (c.keys === "random" ? 1 : 2));
  const base = Date.now() + DAY;
  const commands: TimerCommand[] = Array.from({ length: COMMANDS }, (_, i) => {
    // random: keys spread over the pre-populated ones (t-00000000 … t-{PENDING}); sequential: appended
    const key =
      c.keys === "random"
        ? `t-${String(Math.floor(random() * Math.max(1, c.pending))).padStart(8, "0")}-n${i}`
        : `u-${String(i).padStart(8, "0")}`;
    return {
      kind: "schedule",
      tenantId: "bench",
      serviceCallId: key,
      dueAtMs: base + Math.floor(random() * 30 * DAY),
      data: null,
      correlationId: null,
      timestampMs: Date.now(),
    };
  });
  const w0 = wchar();
  const c0 = cpuUs();
  const t0 = performance.now();
  const nowMs = Date.now();
  for (let i = 0; i < commands.length; i += c.batch) {
    await store.applyCommands(commands.slice(i, i + c.batch), { nowMs: nowMs });
  }
  const wallUs = (performance.now() - t0) * 1000;
  const cpu = cpuUs() - c0;
  const written = wchar() - w0;
  await store.close();
  rmSync(path, { force: true });
  rmSync(`${path}-wal`, { force: true });
  rmSync(`${path}-shm`, { force: true });
  return {
    ...c,
    commands: COMMANDS,
    usPerCommandWall: round(wallUs / COMMANDS, 1),
    usPerCommandCpu: round(cpu / COMMANDS, 1),
    kbWrittenPerCommand: round(written / 1024 / COMMANDS, 2),
    perSecWall: Math.round(COMMANDS / (wallUs / 1e6)),
  };
}

async function fireCase(dir: string, pending: number, template: string | undefined, batch: number): Promise<Record<string, unknown>> {
  const path = join(dir, `fire-${pending}-${batch}.db`);
  if (template !== undefined) (await import("node:fs")).copyFileSync(template, path);
  const n = 20_000;
  // n overdue rows next to the pending ones
  await (await openSqliteTimerStore({ path })).close();
  const now = Date.now();
  populateScheduled(path, { count: n, tenantId: "due", idPrefix: "d", dueAtMs: (i) => now - 60_000 + i, label: "fire" });
  const store = await openSqliteTimerStore({ path, synchronous: "NORMAL" });
  const w0 = wchar();
  const c0 = cpuUs();
  const t0 = performance.now();
  let fired = 0;
  let findUs = 0;
  let markUs = 0;
  for (let guard = 0; guard < n; guard++) {
    const a = performance.now();
    const nowMs = Date.now();
    const due = await store.claimDue({ nowMs, limit: batch, owner: "bench", leaseUntilMs: nowMs + 30_000 });
    const b = performance.now();
    if (due.length === 0) break;
    const firedAtMs = Date.now();
    await store.recordFirings(
      due.map((t) => ({
        ...t,
        next: {
          state: "Reached",
          dueAtMs: t.dueAtMs,
          occurrence: 1,
          reachedAtMs: firedAtMs,
          commandTs: t.commandTs,
          updatedAtMs: firedAtMs,
        },
      })),
    );
    markUs += (performance.now() - b) * 1000;
    findUs += (b - a) * 1000;
    fired += due.length;
  }
  const wallUs = (performance.now() - t0) * 1000;
  const cpu = cpuUs() - c0;
  const written = wchar() - w0;
  await store.close();
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
  return {
    pending,
    batch,
    fired,
    usPerTimerWall: round(wallUs / fired, 1),
    usPerTimerCpu: round(cpu / fired, 1),
    usPerTimerFindDue: round(findUs / fired, 1),
    usPerTimerMarkReached: round(markUs / fired, 1),
    kbWrittenPerTimer: round(written / 1024 / fired, 2),
  };
}

const dir = mkdtempSync(join(tmpdir(), "timer-micro-"));
const cleanup = (): void => rmSync(dir, { recursive: true, force: true });
process.on("SIGINT", () => (cleanup(), process.exit(130)));
try {
  // A template with PENDING Scheduled rows, built once through the service's own migrations.
  let template: string | undefined;
  if (PENDING > 0) {
    template = join(dir, "template.db");
    await (await openSqliteTimerStore({ path: template })).close();
    const base = Date.now() + DAY;
    const p = populateScheduled(template, {
      count: PENDING,
      tenantId: "bench",
      idPrefix: "t",
      dueAtMs: (i) => base + Math.floor((i * 30 * DAY) / PENDING),
      label: "template",
    });
    process.stderr.write(`template: ${PENDING} rows in ${p.seconds} s (${p.dbSizeMB} MB)\n`);
  }
  const results: Record<string, unknown>[] = [];
  const fire: Record<string, unknown>[] = [];
  for (const pending of PENDING > 0 ? [0, PENDING] : [0]) {
    for (const batch of [1, 10, 100, 1000, 5000]) {
      for (const keys of ["random", "sequential"] as const) {
        const r = await runCase(dir, { pending, batch, keys }, pending > 0 ? template : undefined);
        process.stderr.write(`${JSON.stringify(r)}\n`);
        results.push(r);
      }
    }
    for (const batch of [100, 1000]) {
      const r = await fireCase(dir, pending, pending > 0 ? template : undefined, batch);
      process.stderr.write(`${JSON.stringify(r)}\n`);
      fire.push(r);
    }
  }
  process.stdout.write(`${JSON.stringify({ ingest: results, fire })}\n`);
} finally {
  cleanup();
}
