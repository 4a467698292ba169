import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryTimerStore } from "../../src/adapters/memory/memory-timer-store.js";
import { openPostgresTimerStore, type PostgresTimerStore } from "../../src/adapters/postgres/postgres-timer-store.js";
import type { DueCursor, DueTimer, Firing, TimerStore } from "../../src/app/timer-store.js";
import type { DecideRules } from "../../src/app/command-batch.js";
import { advanceDueCursor } from "../../src/app/firing/fair-due-selection.js";
import type { Timer, TimerKey } from "../../src/domain/timer.js";
import type { KeyCommand } from "../../src/domain/timer-command.js";
import { dropSchema, schemaSeries, TEST_DATABASE_URL } from "../support/test-postgres.js";

// Each test gets a schema of its own and drops it.
const schemaNames = schemaSeries("concurrency");
const NOW = 1_764_108_000_000;
const TTL_MS = 30_000;
const decide: DecideRules = { nowMs: NOW };

let opened: PostgresTimerStore[] = [];
let schemasInUse: string[] = [];

function newSchema(): string {
  const schema = schemaNames.next();
  schemasInUse.push(schema);
  return schema;
}

async function open(schema: string): Promise<PostgresTimerStore> {
  const store = await openPostgresTimerStore({ url: TEST_DATABASE_URL, schema, maxConnections: 2 });
  opened.push(store);
  return store;
}

afterEach(async () => {
  for (const store of opened) await store.close();
  for (const schema of schemasInUse) await dropSchema(schema);
  opened = [];
  schemasInUse = [];
});

/** A small seeded generator, so that a failing round can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Random schedules and cancels over a few keys, each with its own timestampMs (no ties: §3.2). */
function randomCommands(next: () => number, round: number, count: number, keys: number): KeyCommand[] {
  const timestamps = Array.from({ length: count }, (_, i) => i + 1).sort(() => next() - 0.5);
  return timestamps.map((timestampMs) => {
    const tenantId = next() < 0.5 ? "acme" : "globex";
    const serviceCallId = `round-${round}-key-${Math.floor(next() * keys)}`;
    if (next() < 0.35) return { kind: "cancel", tenantId, serviceCallId, correlationId: null, timestampMs };
    const dueAtMs = NOW + Math.floor(next() * 1_000);
    const data = next() < 0.5 ? null : JSON.stringify({ v: Math.floor(next() * 3) });
    return { kind: "schedule", tenantId, serviceCallId, dueAtMs, data, correlationId: `c-${timestampMs}`, timestampMs };
  });
}

/** Cuts `commands` into batches of 1–5 dealt at random to two lists (each applied in its own order). */
function deal(next: () => number, commands: readonly KeyCommand[]): [KeyCommand[][], KeyCommand[][]] {
  const lists: [KeyCommand[][], KeyCommand[][]] = [[], []];
  for (let i = 0; i < commands.length;) {
    const size = 1 + Math.floor(next() * 5);
    lists[next() < 0.5 ? 0 : 1].push(commands.slice(i, i + size));
    i += size;
  }
  return lists;
}

/** What §3 makes independent of the order of application: generation counts the versions seen, so it is not. */
function outcome(timer: Timer | undefined): object | undefined {
  if (timer === undefined) return undefined;
  const { state, commandTs } = timer;
  // A cancel that lands first keeps no dueAt; one that lands last keeps the schedule's: only a
  // Scheduled timer's content is fixed by the newest command.
  if (state !== "Scheduled") return { state, commandTs };
  return { state, commandTs, dueAtMs: timer.dueAtMs, data: timer.data, correlationId: timer.correlationId };
}

async function claimAll(store: TimerStore, owner: string, nowMs: number): Promise<DueTimer[]> {
  const claimed: DueTimer[] = [];
  let after: DueCursor | undefined;
  for (;;) {
    const page = await store.claimDue({ nowMs, limit: 7, owner, leaseUntilMs: nowMs + TTL_MS, ...(after === undefined ? {} : { after }) });
    claimed.push(...page);
    after = advanceDueCursor(after, page);
    if (page.length < 7) return claimed;
  }
}

function migrationsInFolder(): unknown[] {
  const journal = readFileSync(fileURLToPath(new URL("../../drizzle/postgres/meta/_journal.json", import.meta.url)), "utf8");
  return (JSON.parse(journal) as { entries: unknown[] }).entries;
}

const keyString = (key: TimerKey) => `${key.tenantId}/${key.serviceCallId}`;

describe("PostgresTimerStore shared by several instances", () => {
  it("when a call fails, then the call made after it still runs, in its turn", async () => {
    const store = await open(newSchema());
    const schedule = (serviceCallId: string, data: string | null): KeyCommand => ({
      kind: "schedule",
      tenantId: "acme",
      serviceCallId,
      dueAtMs: NOW + 60_000,
      data,
      correlationId: null,
      timestampMs: 1,
    });

    // Postgres text cannot hold U+0000: the first call's transaction fails.
    const failing = store.applyCommands([schedule("bad", "\u0000")], decide);
    const next = store.applyCommands([schedule("good", null)], decide);

    await expect(failing).rejects.toThrow();
    expect((await next).map((d) => d.outcome)).toEqual(["accepted"]);
    expect(await store.get({ tenantId: "acme", serviceCallId: "good" })).toMatchObject({ state: "Scheduled" });
    expect(await store.get({ tenantId: "acme", serviceCallId: "bad" })).toBeUndefined();
  });

  it("when two stores apply conflicting commands for the same keys in parallel, then the rows end where the sequential model ends", async () => {
    const schema = newSchema();
    const [first, second] = [await open(schema), await open(schema)];
    const next = random(20_261_125);

    for (let round = 0; round < 40; round++) {
      const commands = randomCommands(next, round, 40, 4);
      const [left, right] = deal(next, commands);
      const applyAll = async (store: TimerStore, batches: KeyCommand[][]) => {
        for (const batch of batches) await store.applyCommands(batch, decide);
      };
      await Promise.all([applyAll(first!, left), applyAll(second!, right)]);

      const model = new MemoryTimerStore();
      for (const command of [...commands].sort((a, b) => a.timestampMs - b.timestampMs)) {
        await model.applyCommands([command], decide);
      }
      const keys = [...new Map(commands.map((c) => [keyString(c), { tenantId: c.tenantId, serviceCallId: c.serviceCallId }])).values()];
      for (const key of keys) {
        expect({ round, key, timer: outcome(await first!.get(key)) }).toEqual({ round, key, timer: outcome(await model.get(key)) });
      }
    }
  });

  it("when two stores apply RetryTimers for the same Missed timers in parallel, then each timer is re-armed once, as one new generation", async () => {
    const schema = newSchema();
    const [first, second] = [await open(schema), await open(schema)];
    const keys = Array.from({ length: 30 }, (_, i) => ({ tenantId: "acme", serviceCallId: `missed-${i}` }));
    await first!.applyCommands(
      keys.map((key) => ({
        kind: "schedule",
        ...key,
        dueAtMs: NOW - 60_000,
        data: null,
        correlationId: null,
        timestampMs: 1,
        maxLatenessMs: 0,
      })),
      decide,
    );
    const due = await claimAll(first!, "a", NOW);
    await first!.recordFirings(
      due.map((t) => ({
        tenantId: t.tenantId,
        serviceCallId: t.serviceCallId,
        dueAtMs: t.dueAtMs,
        generation: t.generation,
        next: { state: "Missed", dueAtMs: t.dueAtMs, occurrence: 1, reachedAtMs: NOW, commandTs: t.commandTs, updatedAtMs: NOW },
      })),
      "a",
    );
    const retries = (timestampMs: number): KeyCommand[] => keys.map((key) => ({ kind: "retry", ...key, correlationId: null, timestampMs }));

    const [left, right] = await Promise.all([first!.applyCommands(retries(10), decide), second!.applyCommands(retries(11), decide)]);

    for (const [i, key] of keys.entries()) {
      expect([left[i]!.outcome, right[i]!.outcome].sort()).toEqual(["accepted", "ignored"]);
      expect(await first!.get(key)).toMatchObject({ state: "Scheduled", generation: 2 });
    }
  });

  it("when two owners claim due timers concurrently, then no timer is claimed by both and every one by someone", async () => {
    const schema = newSchema();
    const [first, second] = [await open(schema), await open(schema)];
    const commands: KeyCommand[] = Array.from({ length: 300 }, (_, i) => ({
      kind: "schedule",
      tenantId: i % 3 === 0 ? "globex" : "acme",
      serviceCallId: `call-${i}`,
      dueAtMs: NOW - (i % 17),
      data: null,
      correlationId: null,
      timestampMs: 1,
    }));
    await first!.applyCommands(commands, decide);

    const [a, b] = await Promise.all([claimAll(first!, "instance-a", NOW), claimAll(second!, "instance-b", NOW)]);

    const claimedByA = new Set(a.map(keyString));
    expect(b.filter((timer) => claimedByA.has(keyString(timer)))).toEqual([]);
    expect(new Set([...a, ...b].map(keyString)).size).toBe(300);
    expect(a.length + b.length).toBe(300);
  });

  it("when an owner's claim expires, then another instance takes the timer over and only its mark counts", async () => {
    const schema = newSchema();
    const [first, second] = [await open(schema), await open(schema)];
    await first!.applyCommands(
      [{ kind: "schedule", tenantId: "acme", serviceCallId: "call-1", dueAtMs: NOW, data: null, correlationId: null, timestampMs: 1 }],
      decide,
    );
    const stale = await first!.claimDue({ nowMs: NOW, limit: 10, owner: "instance-a", leaseUntilMs: NOW + TTL_MS });

    const beforeExpiry = await second!.claimDue({
      nowMs: NOW + TTL_MS - 1,
      limit: 10,
      owner: "instance-b",
      leaseUntilMs: NOW + 2 * TTL_MS,
    });
    const afterExpiry = await second!.claimDue({ nowMs: NOW + TTL_MS, limit: 10, owner: "instance-b", leaseUntilMs: NOW + 2 * TTL_MS });

    expect(stale.map(keyString)).toEqual(["acme/call-1"]);
    expect(beforeExpiry).toEqual([]);
    expect(afterExpiry.map(keyString)).toEqual(["acme/call-1"]);
    const reached = (timers: DueTimer[], atMs: number): Firing[] =>
      timers.map((t) => ({
        tenantId: t.tenantId,
        serviceCallId: t.serviceCallId,
        dueAtMs: t.dueAtMs,
        generation: t.generation,
        next: {
          state: "Reached",
          dueAtMs: t.dueAtMs,
          occurrence: t.occurrence,
          reachedAtMs: atMs,
          commandTs: t.commandTs,
          updatedAtMs: atMs,
        },
      }));
    expect(await first!.recordFirings(reached(stale, NOW + TTL_MS + 1), "instance-a")).toEqual([]);
    expect(await second!.recordFirings(reached(afterExpiry, NOW + TTL_MS + 1), "instance-b")).toEqual([
      { tenantId: "acme", serviceCallId: "call-1" },
    ]);
    expect(await first!.get({ tenantId: "acme", serviceCallId: "call-1" })).toMatchObject({
      state: "Reached",
      reachedAtMs: NOW + TTL_MS + 1,
    });
  });

  it("when three stores open a new schema at once, then the migrations run once and every store works", async () => {
    const schema = newSchema();

    const stores = await Promise.all([open(schema), open(schema), open(schema)]);

    const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await client.connect();
    try {
      const { rows } = await client.query<{ count: string }>(`SELECT count(*) AS count FROM ${schema}.__drizzle_migrations`);
      const { rows: tables } = await client.query("SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'timer_schedules'", [
        schema,
      ]);
      expect(Number(rows[0]?.count)).toBe(migrationsInFolder().length);
      expect(tables).toHaveLength(1);
    } finally {
      await client.end();
    }
    for (const [i, store] of stores.entries()) {
      await store.applyCommands(
        [{ kind: "schedule", tenantId: "acme", serviceCallId: `from-${i}`, dueAtMs: NOW, data: null, correlationId: null, timestampMs: 1 }],
        decide,
      );
    }
    expect(await stores[0]!.countScheduled()).toBe(3);
  });
});
