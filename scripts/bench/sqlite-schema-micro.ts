/**
 * What-if micro-benchmark for the storage layout (raw better-sqlite3, no service code): the store's
 * ingest statements (select by key + upsert, one transaction per batch) and its fire statements
 * (findDue page + conditional mark), on a table holding `--pending` Scheduled rows, for variants
 * of the schema and pragmas. It is evidence for tuning src/adapters/sqlite, not a service figure.
 *
 *   npx tsx scripts/bench/sqlite-schema-micro.ts [--pending 1000000] [--commands 50000] [--batch 1000]
 *
 * Per variant: µs of CPU and wall per command, KB written per command (write syscalls, from
 * /proc/self/io: WAL frames plus checkpoint copies), and the same for fired timers.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { REPO_ROOT, prng, round } from "./harness.js";

const args = process.argv.slice(2);
const arg = (name: string, fallback: number): number => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : fallback;
};
const PENDING = arg("--pending", 1_000_000);
const COMMANDS = arg("--commands", 50_000);
const BATCH = arg("--batch", 1_000);
const FIRE = 20_000;
const DAY = 86_400_000;

interface Variant {
  name: string;
  /** Pragmas before the schema exists (page_size) and per connection. */
  before?: string[];
  pragmas?: string[];
  withoutRowid?: boolean;
}

const VARIANTS: Variant[] = [
  { name: "current (rowid table + PK autoindex + partial due index, 4 KiB pages)" },
  { name: "wal_autocheckpoint=20000", pragmas: ["wal_autocheckpoint = 20000"] },
  { name: "page_size=1024", before: ["page_size = 1024"] },
  { name: "WITHOUT ROWID", withoutRowid: true },
  { name: "WITHOUT ROWID + wal_autocheckpoint=20000", withoutRowid: true, pragmas: ["wal_autocheckpoint = 20000"] },
];

function schemaSql(withoutRowid: boolean): string[] {
  const migration = readFileSync(join(REPO_ROOT, "drizzle/0000_init.sql"), "utf8")
    .split("--> statement-breakpoint")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  return withoutRowid ? migration.map((s) => (s.startsWith("CREATE TABLE") ? s.replace(/\);\s*$/, ") WITHOUT ROWID;") : s)) : migration;
}

const wchar = (): number => Number(/^wchar: (\d+)/m.exec(readFileSync("/proc/self/io", "utf8"))?.[1] ?? 0);
const cpuUs = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

const COLUMNS = `tenant_id AS tenantId, service_call_id AS serviceCallId, state, due_at AS dueAtMs, data,
  correlation_id AS correlationId, command_ts AS commandTs, registered_at AS registeredAtMs,
  reached_at AS reachedAtMs, updated_at AS updatedAtMs`;

function run(dir: string, v: Variant): Record<string, unknown> {
  const path = join(dir, `${v.name.replace(/\W+/g, "_")}.db`);
  const db = new Database(path);
  try {
    for (const p of v.before ?? []) db.pragma(p);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    for (const s of schemaSql(v.withoutRowid === true)) db.exec(s);
    // pre-populate in C: PENDING rows with keys t-00000000… and due times over 30 days
    const t0 = performance.now();
    const base = Date.now() + DAY;
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${PENDING - 1})
      INSERT INTO timer_schedules (tenant_id, service_call_id, state, due_at, command_ts, registered_at, updated_at)
      SELECT 'bench', printf('t-%08d', i), 'Scheduled', ${base} + i * ${Math.floor((30 * DAY) / Math.max(1, PENDING))}, 0, 0, 0 FROM n`);
    db.pragma("wal_checkpoint(TRUNCATE)");
    const populateS = (performance.now() - t0) / 1000;
    for (const p of v.pragmas ?? []) db.pragma(p);

    const select = db.prepare(`SELECT ${COLUMNS} FROM timer_schedules WHERE tenant_id = ? AND service_call_id = ?`);
    const upsert =
      db.prepare(`INSERT INTO timer_schedules (tenant_id, service_call_id, state, due_at, data, correlation_id, command_ts, registered_at, reached_at, updated_at)
      VALUES (@tenantId, @serviceCallId, @state, @dueAtMs, @data, @correlationId, @commandTs, @registeredAtMs, @reachedAtMs, @updatedAtMs)
      ON CONFLICT (tenant_id, service_call_id) DO UPDATE SET state = excluded.state, due_at = excluded.due_at, data = excluded.data,
        correlation_id = excluded.correlation_id, command_ts = excluded.command_ts, registered_at = excluded.registered_at,
        reached_at = excluded.reached_at, updated_at = excluded.updated_at`);
    const apply = db.transaction((batch: { tenantId: string; serviceCallId: string; dueAtMs: number }[]) => {
      const now = Date.now();
      for (const c of batch) {
        select.get(c.tenantId, c.serviceCallId);
        upsert.run({
          ...c,
          state: "Scheduled",
          data: null,
          correlationId: null,
          commandTs: now,
          registeredAtMs: now,
          reachedAtMs: null,
          updatedAtMs: now,
        });
      }
    }).immediate;
    const random = prng(42);
    const commands = Array.from({ length: COMMANDS }, (_, i) => ({
      tenantId: "bench",
      serviceCallId: `t-${String(Math.floor(random() * PENDING)).padStart(8, "0")}-n${i}`,
      dueAtMs: base + Math.floor(random() * 30 * DAY),
    }));
    let w0 = wchar();
    let c0 = cpuUs();
    let t1 = performance.now();
    for (let i = 0; i < COMMANDS; i += BATCH) apply(commands.slice(i, i + BATCH));
    const ingest = {
      usPerCommandCpu: round((cpuUs() - c0) / COMMANDS, 1),
      usPerCommandWall: round(((performance.now() - t1) * 1000) / COMMANDS, 1),
      kbWrittenPerCommand: round((wchar() - w0) / 1024 / COMMANDS, 2),
    };

    // fire: FIRE overdue rows, pages of 100: findDue then mark each (as the store does)
    const now = Date.now();
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${FIRE - 1})
      INSERT INTO timer_schedules (tenant_id, service_call_id, state, due_at, command_ts, registered_at, updated_at)
      SELECT 'due', printf('d-%08d', i), 'Scheduled', ${now - 60_000} + i, 0, 0, 0 FROM n`);
    const findDue = db.prepare(
      `SELECT ${COLUMNS} FROM timer_schedules WHERE state = 'Scheduled' AND due_at <= ? ORDER BY due_at, tenant_id, service_call_id LIMIT 100`,
    );
    const mark = db.prepare(`UPDATE timer_schedules SET state = 'Reached', reached_at = @r, updated_at = @r
      WHERE tenant_id = @tenantId AND service_call_id = @serviceCallId AND state = 'Scheduled' AND due_at = @dueAtMs AND data IS @data AND correlation_id IS @correlationId`);
    const markAll = db.transaction((rows: Record<string, unknown>[]) => {
      for (const r of rows)
        mark.run({
          tenantId: r.tenantId,
          serviceCallId: r.serviceCallId,
          dueAtMs: r.dueAtMs,
          data: r.data,
          correlationId: r.correlationId,
          r: Date.now(),
        });
    }).immediate;
    w0 = wchar();
    c0 = cpuUs();
    t1 = performance.now();
    let fired = 0;
    for (let guard = 0; guard < FIRE; guard++) {
      const rows = findDue.all(Date.now()) as Record<string, unknown>[];
      if (rows.length === 0) break;
      markAll(rows);
      fired += rows.length;
    }
    const fire = {
      usPerTimerCpu: round((cpuUs() - c0) / fired, 1),
      usPerTimerWall: round(((performance.now() - t1) * 1000) / fired, 1),
      kbWrittenPerTimer: round((wchar() - w0) / 1024 / fired, 2),
    };
    const pageSize = db.pragma("page_size", { simple: true }) as number;
    const sizeMB = round(((db.pragma("page_count", { simple: true }) as number) * pageSize) / 1048576);
    return { variant: v.name, pending: PENDING, batch: BATCH, populateS: round(populateS, 1), dbMB: sizeMB, ingest, fire };
  } finally {
    db.close();
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
  }
}

const dir = mkdtempSync(join(tmpdir(), "timer-schema-micro-"));
process.on("SIGINT", () => {
  rmSync(dir, { recursive: true, force: true });
  process.exit(130);
});
try {
  const results = VARIANTS.map((v) => {
    const r = run(dir, v);
    process.stderr.write(`${JSON.stringify(r)}\n`);
    return r;
  });
  process.stdout.write(`${JSON.stringify({ results })}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
