/**
 * What SQLite `synchronous=FULL` costs against NORMAL in the service's own store (run from source
 * with tsx, in this process, no NATS): the two modes alternate round by round in one sitting, so a
 * machine shared with other work loads both alike; compare the ratios, not the absolute figures.
 *
 *   npx tsx scripts/reliability/sync-cost.ts [--rounds 5] [--commands 20000]
 *
 * Per round and mode: ScheduleTimer commands applied in transactions of 1, 10, 100 and 1000 (the
 * consumer's batches range from one message at low load to hundreds in a backlog), then due timers
 * fired (claimDue + recordFirings, batches of 100). Reports wall and CPU µs per command (CPU from
 * process.cpuUsage, i.e. /proc) and the FULL/NORMAL ratio of the medians. One JSON line on stdout.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import type { TimerCommand } from "../../src/domain/timer-command.js";

const args = process.argv.slice(2);
const arg = (name: string, fallback: number): number => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : fallback;
};
const ROUNDS = arg("--rounds", 5);
const COMMANDS = arg("--commands", 20_000);
const BATCHES = [1, 10, 100, 1000];
const MODES = ["NORMAL", "FULL"] as const;
type Mode = (typeof MODES)[number];

const cpuUs = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

async function ingestCase(dir: string, mode: Mode, batch: number, round: number): Promise<{ wallUs: number; cpuUs: number }> {
  const path = join(dir, `ingest-${mode}-${batch}-${round}.db`);
  const store = await openSqliteTimerStore({ path, synchronous: mode });
  // One commit per command is slow under FULL: fewer of them.
  const n = batch === 1 ? Math.min(COMMANDS, 2_000) : COMMANDS;
  const base = Date.now() + 86_400_000;
  const commands: TimerCommand[] = Array.from({ length: n }, (_, i) => ({
    kind: "schedule",
    tenantId: "sync",
    serviceCallId: `c-${round}-${i}`,
    dueAtMs: base + ((i * 7919) % 1_000_000) * 1000,
    data: null,
    correlationId: null,
    timestampMs: Date.now(),
  }));
  const c0 = cpuUs();
  const t0 = performance.now();
  const nowMs = Date.now();
  for (let i = 0; i < n; i += batch) {
    await store.applyCommands(commands.slice(i, i + batch), { nowMs: nowMs });
  }
  const result = { wallUs: ((performance.now() - t0) * 1000) / n, cpuUs: (cpuUs() - c0) / n };
  await store.close();
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
  return result;
}

async function fireCase(dir: string, mode: Mode, round: number): Promise<{ wallUs: number; cpuUs: number }> {
  const path = join(dir, `fire-${mode}-${round}.db`);
  const store = await openSqliteTimerStore({ path, synchronous: mode });
  const n = Math.min(COMMANDS, 10_000);
  const past = Date.now() - 60_000;
  const commands: TimerCommand[] = Array.from({ length: n }, (_, i) => ({
    kind: "schedule",
    tenantId: "sync",
    serviceCallId: `f-${i}`,
    dueAtMs: past + i,
    data: null,
    correlationId: null,
    timestampMs: Date.now(),
  }));
  const nowMs = Date.now();
  for (let i = 0; i < n; i += 1000) await store.applyCommands(commands.slice(i, i + 1000), { nowMs: nowMs });
  const c0 = cpuUs();
  const t0 = performance.now();
  let fired = 0;
  for (;;) {
    const now = Date.now();
    const due = await store.claimDue({ nowMs: now, limit: 100, owner: "sync", leaseUntilMs: now + 30_000 });
    if (due.length === 0) break;
    await store.recordFirings(
      due.map((t) => ({
        ...t,
        next: { state: "Reached", dueAtMs: t.dueAtMs, occurrence: 1, reachedAtMs: now, commandTs: t.commandTs, updatedAtMs: now },
      })),
    );
    fired += due.length;
  }
  const result = { wallUs: ((performance.now() - t0) * 1000) / fired, cpuUs: (cpuUs() - c0) / fired };
  await store.close();
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
  return result;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};
const r1 = (x: number): number => Math.round(x * 10) / 10;

const dir = mkdtempSync(join(tmpdir(), "sync-cost-"));
const samples = new Map<string, { wallUs: number[]; cpuUs: number[] }>();
const record = (key: string, r: { wallUs: number; cpuUs: number }): void => {
  const s = samples.get(key) ?? { wallUs: [], cpuUs: [] };
  s.wallUs.push(r.wallUs);
  s.cpuUs.push(r.cpuUs);
  samples.set(key, s);
};
try {
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which mode goes first, so neither always runs on a warmer page cache.
    const order = round % 2 === 0 ? MODES : ([...MODES].reverse() as Mode[]);
    for (const mode of order) {
      for (const batch of BATCHES) record(`ingest/${batch}/${mode}`, await ingestCase(dir, mode, batch, round));
      record(`fire/100/${mode}`, await fireCase(dir, mode, round));
    }
    process.stderr.write(`sync-cost: round ${round + 1}/${ROUNDS} done\n`);
  }
  const cases = [...BATCHES.map((b) => `ingest/${b}`), "fire/100"].map((name) => {
    const normal = samples.get(`${name}/NORMAL`)!;
    const full = samples.get(`${name}/FULL`)!;
    return {
      case: name,
      normalWallUs: r1(median(normal.wallUs)),
      fullWallUs: r1(median(full.wallUs)),
      wallRatio: Math.round((median(full.wallUs) / median(normal.wallUs)) * 100) / 100,
      normalCpuUs: r1(median(normal.cpuUs)),
      fullCpuUs: r1(median(full.cpuUs)),
      cpuRatio: Math.round((median(full.cpuUs) / median(normal.cpuUs)) * 100) / 100,
    };
  });
  for (const c of cases) process.stderr.write(`${JSON.stringify(c)}\n`);
  process.stdout.write(`${JSON.stringify({ syncCost: { rounds: ROUNDS, commands: COMMANDS, cases } })}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
