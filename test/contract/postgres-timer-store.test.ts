import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { MemoryTimerStore } from "../../src/adapters/memory/memory-timer-store.js";
import { openPostgresTimerStore, type PostgresTimerStore } from "../../src/adapters/postgres/postgres-timer-store.js";
import type { DecideCommand, Firing, TimerStore } from "../../src/app/timer-store.js";
import type { ScheduleTimerCommand, TimerCommand } from "../../src/domain/timer-command.js";
import { decideCommand } from "../../src/domain/timer-rules.js";
import { describeTimerStoreContract } from "./timer-store.contract.js";

// The machine's Postgres (trust auth); each test gets a schema of its own and drops it.
const DATABASE_URL = process.env.TIMER_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const FILE_PREFIX = `contract_${randomBytes(4).toString("hex")}`;
let schemas = 0;

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

describeTimerStoreContract("PostgresTimerStore", async () => {
  const schema = `${FILE_PREFIX}_${++schemas}`;
  const open = () => openPostgresTimerStore({ url: DATABASE_URL, schema, maxConnections: 2 });
  const opened: PostgresTimerStore[] = [await open()];
  const reopen = async () => {
    const reopened = await open();
    opened.push(reopened);
    return reopened;
  };
  const cleanup = async () => {
    for (const each of opened) await each.close();
    await dropSchema(schema);
  };
  return { store: opened[0]!, reopen, cleanup, recordsClaims: true };
});

afterAll(async () => {
  // Leftovers of a test that failed before its cleanup.
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>("SELECT nspname AS name FROM pg_namespace WHERE nspname LIKE $1", [
      `${FILE_PREFIX}%`,
    ]);
    for (const { name } of rows) await client.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
  } finally {
    await client.end();
  }
});

/**
 * The v2 parts of the port (recurring timers, prefix cancels, recordFirings), checked against the
 * memory store, the reference: the same calls on both must give the same results. (The shared
 * contract suite does not cover them yet.)
 */
describe("PostgresTimerStore matches MemoryTimerStore on the v2 port", () => {
  const NOW = 1_764_108_000_000;
  const decide: DecideCommand = (current, command, context) => decideCommand(current, command, NOW, context);
  let store: PostgresTimerStore;
  let schema: string;

  beforeEach(async () => {
    schema = `${FILE_PREFIX}_${++schemas}`;
    store = await openPostgresTimerStore({ url: DATABASE_URL, schema, maxConnections: 2 });
  });
  afterEach(async () => {
    await store.close();
    await dropSchema(schema);
  });

  const schedule = (serviceCallId: string, fields: Partial<ScheduleTimerCommand> = {}): ScheduleTimerCommand => ({
    kind: "schedule",
    tenantId: "acme",
    serviceCallId,
    dueAtMs: NOW,
    data: null,
    correlationId: null,
    timestampMs: 5,
    ...fields,
  });
  const cancelPrefix = (serviceCallIdPrefix: string, timestampMs: number): TimerCommand => ({
    kind: "cancelPrefix",
    tenantId: "acme",
    serviceCallIdPrefix,
    correlationId: null,
    timestampMs,
  });

  /** Runs `scenario` on a memory store and on Postgres and expects the same results. */
  async function same(scenario: (s: TimerStore) => Promise<unknown>): Promise<void> {
    const memory = new MemoryTimerStore();
    const expected = await scenario(memory);
    expect(await scenario(store)).toEqual(expected);
  }

  it("when a recurring timer with a lateness bound is stored, then repeat, occurrence and maxLatenessMs round trip", async () => {
    const repeat = { everyMs: 60_000, untilMs: NOW + 3_600_000, maxOccurrences: 5, firstDueAtMs: NOW };
    await same(async (s) => {
      await s.applyCommands([schedule("every-minute", { repeat, maxLatenessMs: 1_000 }), schedule("once")], decide);
      const due = await s.claimDue({ nowMs: NOW, limit: 10, owner: "a", leaseUntilMs: NOW + 30_000 });
      return [await s.get({ tenantId: "acme", serviceCallId: "every-minute" }), due];
    });
  });

  it("when a firing moves a recurring timer to its next occurrence, then it stays Scheduled, unclaimed, and a stale second record is refused", async () => {
    const repeat = { everyMs: 60_000, untilMs: null, maxOccurrences: null, firstDueAtMs: NOW };
    await same(async (s) => {
      await s.applyCommands([schedule("every-minute", { repeat })], decide);
      const [due] = await s.claimDue({ nowMs: NOW, limit: 10, owner: "a", leaseUntilMs: NOW + 30_000 });
      const firing: Firing = {
        tenantId: due!.tenantId,
        serviceCallId: due!.serviceCallId,
        dueAtMs: due!.dueAtMs,
        generation: due!.generation,
        next: {
          state: "Scheduled",
          dueAtMs: NOW + 60_000,
          occurrence: 2,
          reachedAtMs: NOW + 5,
          commandTs: due!.commandTs,
          updatedAtMs: NOW + 5,
        },
      };
      const first = await s.recordFirings([firing], "a");
      const again = await s.recordFirings([firing], "a");
      const byOther = await s.claimDue({ nowMs: NOW + 60_000, limit: 10, owner: "b", leaseUntilMs: NOW + 90_000 });
      return [first, again, await s.get(due!), byOther];
    });
  });

  it("when a prefix cancel is recorded, then later older schedules under it are ignored and claims carry its timestamp", async () => {
    await same(async (s) => {
      const decisions = await s.applyCommands(
        [
          schedule("job-1", { timestampMs: 3 }),
          cancelPrefix("job-", 10),
          schedule("job-2", { timestampMs: 7 }),
          schedule("other", { timestampMs: 7 }),
        ],
        decide,
      );
      const older = await s.applyCommands(
        [cancelPrefix("job-", 8), schedule("job-3", { timestampMs: 9 }), schedule("job-4", { timestampMs: 11 })],
        decide,
      );
      const due = await s.claimDue({ nowMs: NOW, limit: 10, owner: "a", leaseUntilMs: NOW + 30_000 });
      return [
        decisions.map((d) => d.outcome),
        older.map((d) => d.outcome),
        due.map((t) => [t.serviceCallId, t.prefixCancelTs]),
        await s.unfinishedPrefixCancels(),
      ];
    });
    const due = await store.claimDue({ nowMs: NOW, limit: 10, owner: "a", leaseUntilMs: NOW + 30_000 });
    expect(due.map((t) => [t.serviceCallId, t.prefixCancelTs])).toEqual([
      ["job-1", 10],
      ["job-4", 10],
      ["other", null],
    ]);
    expect(await store.get({ tenantId: "acme", serviceCallId: "job-2" })).toBeUndefined();
  });

  it("when a prefix cancel is swept in small steps, then every matching timer is cancelled once and the sweep finishes", async () => {
    await same(async (s) => {
      const ids = ["job-a", "job-b", "job-c", "job-d", "job-e", "jobless", "job-😀", "other"];
      await s.applyCommands(
        ids.map((id) => schedule(id, { timestampMs: 3 })),
        decide,
      );
      await s.applyCommands([schedule("job-new", { timestampMs: 20 }), cancelPrefix("job-", 10)], decide);
      const steps: unknown[] = [];
      for (let i = 0; i < 10; i++) {
        const { decisions, done } = await s.sweepPrefixCancel({ tenantId: "acme", serviceCallIdPrefix: "job-" }, 2, decide);
        steps.push([decisions.map((d) => [d.previous?.serviceCallId, d.outcome]), done]);
        if (done) break;
      }
      const states = await Promise.all(
        [...ids, "job-new"].map(async (id) => [id, (await s.get({ tenantId: "acme", serviceCallId: id }))?.state]),
      );
      return [steps, states, await s.unfinishedPrefixCancels(), await s.countScheduled()];
    });
    const state = async (serviceCallId: string) => (await store.get({ tenantId: "acme", serviceCallId }))?.state;
    expect(await Promise.all(["job-a", "job-😀", "jobless", "job-new", "other"].map(state))).toEqual([
      "Cancelled",
      "Cancelled",
      "Scheduled",
      "Scheduled",
      "Scheduled",
    ]);
    expect(await store.unfinishedPrefixCancels()).toEqual([]);
  });
});
