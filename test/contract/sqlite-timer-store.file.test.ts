import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqliteTimerStore, type SqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import type { DecideRules } from "../../src/app/command-batch.js";

/** Every migration drizzle-kit generated, each applied once. */
const MIGRATION_COUNT = (
  JSON.parse(readFileSync(fileURLToPath(new URL("../../drizzle/sqlite/meta/_journal.json", import.meta.url)), "utf8")) as {
    entries: unknown[];
  }
).entries.length;

describe("SqliteTimerStore database file", () => {
  let folder: string;
  const opened: SqliteTimerStore[] = [];
  const open = async (path: string) => {
    const store = await openSqliteTimerStore({ path });
    opened.push(store);
    return store;
  };

  /** Reads the file with a connection of its own, so the store's connection cannot hide anything. */
  function inspect<T>(path: string, read: (db: Database.Database) => T): T {
    const db = new Database(path, { readonly: true });
    try {
      return read(db);
    } finally {
      db.close();
    }
  }

  /** Migrates a new file at `path` with the migrations before `tag` only, as an earlier release left it. */
  function migrateBefore(path: string, tag: string): Database.Database {
    const migrations = join(folder, `before-${tag}`);
    cpSync(join(import.meta.dirname, "../../drizzle/sqlite"), migrations, { recursive: true });
    const journalPath = join(migrations, "meta/_journal.json");
    const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: { idx: number; tag: string }[] };
    const until = journal.entries.findIndex((e) => e.tag === tag);
    expect(until).toBeGreaterThan(0);
    writeFileSync(journalPath, JSON.stringify({ ...journal, entries: journal.entries.slice(0, until) }));
    const db = new Database(path);
    migrate(drizzle({ client: db }), { migrationsFolder: migrations });
    return db;
  }

  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), "timer-store-file-"));
  });
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it("when the folder of the path is missing, then it is created", async () => {
    const path = join(folder, "nested", "deeper", "timer.db");

    const store = await open(path);

    expect(store.isOpen()).toBe(true);
    expect(existsSync(path)).toBe(true);
  });

  it("when the store is open, then the file is in WAL mode", async () => {
    const path = join(folder, "timer.db");

    await open(path);

    expect(inspect(path, (db) => db.pragma("journal_mode", { simple: true }))).toBe("wal");
  });

  it("when the store is reopened, then the migrations are not applied again and timers are kept", async () => {
    const path = join(folder, "timer.db");
    const first = await open(path);
    const command = { tenantId: "acme", serviceCallId: "call-1", dueAtMs: 5, data: null, correlationId: null };
    await first.applyCommands([{ kind: "schedule", ...command, timestampMs: 1 }], { nowMs: 1 });
    await first.close();

    const second = await open(path);

    expect(await second.countScheduled()).toBe(1);
    expect(inspect(path, (db) => db.prepare("SELECT count(*) AS n FROM __drizzle_migrations").get())).toEqual({ n: MIGRATION_COUNT });
  });

  it("when tenants' earliest timers are cancelled, moved later or swept by a prefix cancel, then their due-tenant entries follow in the same write and nextDueAt is exact without a poll", async () => {
    const path = join(folder, "timer.db");
    const store = await open(path);
    const decide: DecideRules = { nowMs: 1 };
    const keyed = { data: null, correlationId: null };
    const schedule = (tenantId: string, serviceCallId: string, dueAtMs: number, timestampMs = 1) => ({
      kind: "schedule" as const,
      tenantId,
      serviceCallId,
      dueAtMs,
      timestampMs,
      ...keyed,
    });
    // More tenants than nextDueAt walks, so that a stale entry would show in its answer.
    const cancelled = Array.from({ length: 80 }, (_, i) => `cancelled-${String(i).padStart(2, "0")}`);
    const moved = Array.from({ length: 5 }, (_, i) => `moved-${i}`);
    await store.applyCommands(
      [
        ...cancelled.map((tenantId, i) => schedule(tenantId, "early", 100 + i)),
        ...moved.flatMap((tenantId, i) => [schedule(tenantId, "early", 100 + i), schedule(tenantId, "later", 2_000 + i)]),
        schedule("swept", "p-1", 50),
        schedule("swept", "p-2", 60),
        schedule("swept", "kept", 3_000),
        schedule("acme", "real", 1_000),
      ],
      decide,
    );
    await store.applyCommands(
      [
        ...cancelled.map((tenantId) => ({
          kind: "cancel" as const,
          tenantId,
          serviceCallId: "early",
          timestampMs: 2,
          correlationId: null,
        })),
        ...moved.map((tenantId) => schedule(tenantId, "early", 9_000, 2)),
        { kind: "cancelPrefix" as const, tenantId: "swept", serviceCallIdPrefix: "p-", timestampMs: 2, correlationId: null },
      ],
      decide,
    );
    await store.sweepPrefixCancel({ tenantId: "swept", serviceCallIdPrefix: "p-" }, 100, 1);

    expect(await store.nextDueAt()).toBe(1_000);
    expect(
      inspect(path, (db) =>
        db.prepare("SELECT tenant_id AS tenantId, earliest_due_at AS earliestDueAtMs FROM timer_due_tenants ORDER BY tenant_id").all(),
      ),
    ).toEqual([
      { tenantId: "acme", earliestDueAtMs: 1_000 },
      ...moved.map((tenantId, i) => ({ tenantId, earliestDueAtMs: 2_000 + i })),
      { tenantId: "swept", earliestDueAtMs: 3_000 },
    ]);
  });

  it("when more tenants than nextDueAt walks have entries below their timers, then it answers a bound no later than the real due time", async () => {
    const path = join(folder, "timer.db");
    const store = await open(path);
    const tenants = Array.from({ length: 80 }, (_, i) => `tenant-${String(i).padStart(2, "0")}`);
    const keyed = { data: null, correlationId: null, timestampMs: 1 };
    await store.applyCommands(
      [
        ...tenants.map((tenantId) => ({ kind: "schedule" as const, tenantId, serviceCallId: "late", dueAtMs: 5_000, ...keyed })),
        { kind: "schedule" as const, tenantId: "acme", serviceCallId: "real", dueAtMs: 1_000, ...keyed },
      ],
      { nowMs: 1 },
    );
    const db = new Database(path);
    db.prepare("UPDATE timer_due_tenants SET earliest_due_at = 100 WHERE tenant_id <> 'acme'").run();
    db.close();

    const bound = await store.nextDueAt();

    expect(bound).not.toBeNull();
    expect(bound!).toBeLessThanOrEqual(1_000);
  });

  it("when a database whose due-tenant entries lie below their tenants' timers (an earlier release's) is opened, then the entries are exact", async () => {
    const path = join(folder, "timer.db");
    // The releases whose triggers kept timer_due_tenants only ever lowered an entry.
    const db = migrateBefore(path, "0014_drop_tally_triggers");
    const insert = db.prepare(
      "INSERT INTO timer_schedules (tenant_id, service_call_id, state, due_at, command_ts, registered_at, updated_at) VALUES (?, ?, ?, ?, 1, 1, 1)",
    );
    insert.run("cancelled", "a", "Scheduled", 100);
    insert.run("moved", "a", "Scheduled", 100);
    insert.run("moved", "b", "Scheduled", 700);
    db.prepare("UPDATE timer_schedules SET state = 'Cancelled' WHERE tenant_id = 'cancelled'").run();
    db.prepare("UPDATE timer_schedules SET due_at = 900 WHERE tenant_id = 'moved' AND service_call_id = 'a'").run();
    db.close();

    await open(path);

    expect(
      inspect(path, (reader) =>
        reader.prepare("SELECT tenant_id AS tenantId, earliest_due_at AS earliestDueAtMs FROM timer_due_tenants ORDER BY tenant_id").all(),
      ),
    ).toEqual([{ tenantId: "moved", earliestDueAtMs: 700 }]);
  });

  it("when a database of the releases with tally triggers is opened, then its counts and due tenants are a recount and later writes keep them so", async () => {
    const path = join(folder, "timer.db");
    const db = migrateBefore(path, "0014_drop_tally_triggers");
    const insert = db.prepare(`
      INSERT INTO timer_schedules (tenant_id, service_call_id, state, due_at, command_ts, registered_at, updated_at, fired_at, completed_at)
      VALUES (?, ?, ?, ?, 1, 1, 1, ?, ?)`);
    insert.run("acme", "a", "Scheduled", 500, null, null);
    insert.run("acme", "b", "Scheduled", 300, null, null);
    insert.run("acme", "c", "Completed", 100, 1_000, 1_250);
    insert.run("acme", "d", "Completed", 100, 2_000, 2_050);
    insert.run("globex", "a", "Fired", 100, 3_000, null);
    insert.run("globex", "b", "Scheduled", 800, null, null);
    insert.run("initech", "a", "Reached", 100, null, null);
    db.prepare("UPDATE timer_schedules SET state = 'Cancelled' WHERE tenant_id = 'acme' AND service_call_id = 'b'").run();
    db.prepare("DELETE FROM timer_schedules WHERE tenant_id = 'initech'").run();
    // What a file can hold besides: a count off by one (the recount puts it right).
    db.prepare("UPDATE timer_state_counts SET count = count + 1 WHERE tenant_id = 'globex' AND state = 'Fired'").run();
    db.close();

    const store = await open(path);
    await store.applyCommands(
      [
        { kind: "schedule", tenantId: "acme", serviceCallId: "e", dueAtMs: 200, data: null, correlationId: null, timestampMs: 2 },
        { kind: "cancel", tenantId: "globex", serviceCallId: "b", correlationId: null, timestampMs: 2 },
      ],
      { nowMs: 10 },
    );

    const tallies = inspect(path, (reader) => ({
      triggers: reader.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").all(),
      counts: reader
        .prepare(
          `SELECT tenant_id AS tenantId, state, count, duration_sum_ms AS durationSumMs, duration_count AS durationCount
           FROM timer_state_counts WHERE count <> 0 ORDER BY 1, 2`,
        )
        .all(),
      dueTenants: reader.prepare("SELECT tenant_id AS tenantId, earliest_due_at AS earliestDueAtMs FROM timer_due_tenants").all(),
    }));
    expect(tallies).toEqual({
      triggers: [],
      counts: [
        { tenantId: "acme", state: "Cancelled", count: 1, durationSumMs: 0, durationCount: 0 },
        { tenantId: "acme", state: "Completed", count: 2, durationSumMs: 300, durationCount: 2 },
        { tenantId: "acme", state: "Scheduled", count: 2, durationSumMs: 0, durationCount: 0 },
        { tenantId: "globex", state: "Cancelled", count: 1, durationSumMs: 0, durationCount: 0 },
        { tenantId: "globex", state: "Fired", count: 1, durationSumMs: 0, durationCount: 0 },
      ],
      dueTenants: [{ tenantId: "acme", earliestDueAtMs: 200 }],
    });
  });

  it("when a v1 database with timers is opened, then it is migrated WITHOUT ROWID and its timers are kept at generation 1", async () => {
    const path = join(folder, "timer.db");
    const v1Migrations = join(folder, "v1-migrations");
    cpSync(join(import.meta.dirname, "../../drizzle/sqlite"), v1Migrations, { recursive: true });
    const journalPath = join(v1Migrations, "meta/_journal.json");
    const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: { idx: number }[] };
    writeFileSync(journalPath, JSON.stringify({ ...journal, entries: journal.entries.filter((e) => e.idx === 0) }));
    const db = new Database(path);
    migrate(drizzle({ client: db }), { migrationsFolder: v1Migrations });
    db.prepare(
      "INSERT INTO timer_schedules (tenant_id, service_call_id, state, due_at, data, correlation_id, command_ts, registered_at, reached_at, updated_at) VALUES ('acme', 'call-1', 'Scheduled', 5, '{\"a\":1}', 'c', 7, 1, NULL, 1)",
    ).run();
    db.close();

    const store = await open(path);

    expect(await store.get({ tenantId: "acme", serviceCallId: "call-1" })).toMatchObject({
      state: "Scheduled",
      dueAtMs: 5,
      data: '{"a":1}',
      commandTs: 7,
      generation: 1,
    });
    expect(
      inspect(path, (db) => (db.prepare("SELECT sql FROM sqlite_master WHERE name = 'timer_schedules'").get() as { sql: string }).sql),
    ).toMatch(/WITHOUT ROWID$/);
  });

  it("when a file whose timers kept their history on the row is opened, then each entry moves to timer_history in order and the column goes", async () => {
    const path = join(folder, "timer.db");
    const db = migrateBefore(path, "0015_timer_history_log");
    const entries = [
      { at: "2026-12-01T00:00:00.000Z", kind: "command", type: "ScheduleTimer", timestampMs: 7, outcome: "applied" },
      {
        at: "2026-12-01T00:00:01.000Z",
        kind: "command",
        type: "CancelTimer",
        timestampMs: 6,
        outcome: "ignored",
        reason: 'a "quoted" reason',
      },
    ];
    const insert = db.prepare(
      "INSERT INTO timer_schedules (tenant_id, service_call_id, state, due_at, data, correlation_id, command_ts, registered_at, reached_at, updated_at, history) VALUES ('acme', ?, 'Scheduled', 5, NULL, NULL, 7, 1, NULL, 1, ?)",
    );
    insert.run("with-history", JSON.stringify(entries));
    insert.run("without-history", null);
    db.close();

    const store = await open(path);

    const queries = inspect(path, (db) => ({
      rows: db.prepare("SELECT service_call_id AS serviceCallId, entry FROM timer_history ORDER BY id").all(),
      columns: (db.prepare("SELECT name FROM pragma_table_info('timer_schedules')").all() as { name: string }[]).map((c) => c.name),
    }));
    expect(queries.rows).toEqual(entries.map((entry) => ({ serviceCallId: "with-history", entry: JSON.stringify(entry) })));
    expect(queries.columns).not.toContain("history");
    expect(await store.get({ tenantId: "acme", serviceCallId: "without-history" })).toMatchObject({ state: "Scheduled" });
  });

  it("when migrationsFolder is given, then the migrations are read from there", async () => {
    const path = join(folder, "timer.db");

    await expect(openSqliteTimerStore({ path, migrationsFolder: join(folder, "no-migrations") })).rejects.toThrow(/journal/);
  });

  it("when the store is closed, then isOpen turns false", async () => {
    const store = await open(join(folder, "timer.db"));

    await store.close();

    expect(store.isOpen()).toBe(false);
  });
});
