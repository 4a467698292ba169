/**
 * The SQLite store keeps `timer_state_counts` (stats, quotas) and `timer_due_tenants` (fair firing)
 * itself, once per write transaction (batch-tallies.ts): after any mix of command batches, firings,
 * passed deadlines, prefix-cancel sweeps, retention deletes and imports, both tables equal a recount
 * of timer_schedules. Reproduce a failure with FC_SEED=<seed in the describe name>.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import type Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { openSqliteTimerStore, type SqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import { openSqliteTimerTransfer } from "../../src/adapters/sqlite/sqlite-timer-transfer.js";
import { CronerCalendar } from "../../src/adapters/cron/croner-calendar.js";
import { decideFiring } from "../../src/domain/firing-rules.js";
import { decideDeadline } from "../../src/domain/delivery-rules.js";
import type { TimerCommand } from "../../src/domain/timer-command.js";
import type { Timer } from "../../src/domain/timer.js";
import { timerArbitrary } from "../support/transfer-arbitraries.js";
import { propertySeed } from "../support/property-seed.js";

const seed = propertySeed();
const folder = mkdtempSync(join(tmpdir(), "sqlite-tallies-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const T0 = 1_800_000_000_000;
const TENANTS = ["t1", "t2", "t3"] as const;
const IDS = ["a1", "a2", "b1", "b2", "b3"] as const;
const OWNER = "tallies-test";
const calendar = new CronerCalendar();

const tenant = fc.constantFrom(...TENANTS);
const id = fc.constantFrom(...IDS);
/** Offsets of a command's timestamp from the step's clock: some older than what they meet. */
const tsOffset = fc.integer({ min: -3, max: 3 });

const command = fc.oneof(
  fc.record({
    kind: fc.constant("schedule" as const),
    tenantId: tenant,
    serviceCallId: id,
    slot: fc.integer({ min: -3, max: 6 }),
    tracked: fc.boolean(),
    recurring: fc.boolean(),
    ts: tsOffset,
  }),
  fc.record({ kind: fc.constant("cancel" as const), tenantId: tenant, serviceCallId: id, ts: tsOffset }),
  fc.record({
    kind: fc.constant("cancelPrefix" as const),
    tenantId: tenant,
    serviceCallIdPrefix: fc.constantFrom("a", "b", "b3"),
    ts: tsOffset,
  }),
  fc.record({
    kind: fc.constantFrom("complete" as const, "fail" as const, "retry" as const),
    tenantId: tenant,
    serviceCallId: id,
    ts: tsOffset,
  }),
);
type CommandSpec = typeof command extends fc.Arbitrary<infer T> ? T : never;

const step = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant("commands" as const),
      commands: fc.array(command, { minLength: 1, maxLength: 8 }),
      quota: fc.boolean(),
    }),
    weight: 5,
  },
  { arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 1, max: 4_000 }) }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant("fire" as const), limit: fc.integer({ min: 1, max: 6 }) }), weight: 3 },
  { arbitrary: fc.constant({ kind: "deadlines" as const }), weight: 2 },
  { arbitrary: fc.constant({ kind: "sweep" as const }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("retention" as const), limit: fc.integer({ min: 1, max: 4 }) }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant("import" as const),
      timers: fc.array(fc.tuple(timerArbitrary, tenant, id, fc.integer({ min: -6, max: 6 })), { maxLength: 5 }),
    }),
    weight: 1,
  },
);

function commandOf(spec: CommandSpec, nowMs: number): TimerCommand {
  const timestampMs = nowMs + spec.ts;
  if (spec.kind === "cancelPrefix") {
    const { tenantId, serviceCallIdPrefix } = spec;
    return { kind: "cancelPrefix", tenantId, serviceCallIdPrefix, correlationId: null, timestampMs };
  }
  const { tenantId, serviceCallId } = spec;
  switch (spec.kind) {
    case "schedule": {
      const dueAtMs = nowMs + spec.slot * 1_000;
      const recurring = spec.recurring && !spec.tracked;
      return {
        kind: "schedule",
        tenantId,
        serviceCallId,
        dueAtMs,
        data: null,
        correlationId: null,
        timestampMs,
        repeat: recurring ? { everyMs: 1_500, untilMs: null, maxOccurrences: 3, firstDueAtMs: dueAtMs } : null,
        maxLatenessMs: spec.slot === -3 ? 1_000 : null,
        delivery: spec.tracked ? { maxRetries: 1, backoffMs: 100, completionTimeoutMs: 1_000 } : null,
      };
    }
    case "cancel":
      return { kind: "cancel", tenantId, serviceCallId, correlationId: null, timestampMs };
    case "complete":
      return { kind: "complete", tenantId, serviceCallId, result: null, correlationId: null, timestampMs };
    case "fail":
      return { kind: "fail", tenantId, serviceCallId, reason: "boom", correlationId: null, timestampMs };
    case "retry":
      return { kind: "retry", tenantId, serviceCallId, correlationId: null, timestampMs };
  }
}

type Step = typeof step extends fc.Arbitrary<infer T> ? T : never;

async function run(store: SqliteTimerStore, path: string, s: Step, nowMs: number): Promise<void> {
  switch (s.kind) {
    case "commands":
      await store.applyCommands(
        s.commands.map((c) => commandOf(c, nowMs)),
        { nowMs, ...(s.quota ? { maxPendingPerTenant: 3 } : {}) },
      );
      return;
    case "fire": {
      const due = await store.claimDue({ nowMs, limit: s.limit, owner: OWNER, leaseUntilMs: nowMs + 30_000 });
      const firings = due.map((timer) => {
        const { tenantId, serviceCallId, dueAtMs, generation } = timer;
        return { tenantId, serviceCallId, dueAtMs, generation, next: decideFiring(timer, nowMs, calendar, timer.prefixCancelTs).next };
      });
      await store.recordFirings(firings);
      return;
    }
    case "deadlines": {
      const passed = await store.claimDeadlines({ nowMs, limit: 10, owner: OWNER, leaseUntilMs: nowMs + 30_000 });
      await store.recordDeadlines(
        passed.map((timer) => {
          const { tenantId, serviceCallId, attempt, deadlineAtMs } = timer;
          return { tenantId, serviceCallId, attempt, deadlineAtMs, next: decideDeadline(timer, nowMs).next };
        }),
      );
      return;
    }
    case "sweep":
      for (const cancel of await store.unfinishedPrefixCancels()) await store.sweepPrefixCancel(cancel, 2, nowMs);
      return;
    case "retention":
      await store.retention.deleteFinalTimers(nowMs + 1, s.limit);
      return;
    case "import": {
      const transfer = openSqliteTimerTransfer({ path, create: false });
      try {
        const timers = s.timers.map(
          ([timer, tenantId, serviceCallId, ts]) => ({ ...timer, tenantId, serviceCallId, commandTs: nowMs + ts }) as Timer,
        );
        await transfer.importBatch(timers.map((timer) => ({ kind: "timer", timer })));
      } finally {
        await transfer.close();
      }
      return;
    }
    case "advance":
      return;
  }
}

const DURATION = "CASE WHEN state = 'Completed' AND completed_at IS NOT NULL AND fired_at IS NOT NULL";

/** The kept tallies and a recount of timer_schedules, in the same shape. */
function talliesAndRecount(db: Database.Database) {
  const read = (sql: string) => db.prepare(sql).all();
  return {
    kept: {
      counts: read(`
        SELECT tenant_id, state, count, duration_sum_ms, duration_count FROM timer_state_counts
        WHERE count <> 0 OR duration_sum_ms <> 0 OR duration_count <> 0 ORDER BY 1, 2`),
      dueTenants: read("SELECT tenant_id, earliest_due_at FROM timer_due_tenants ORDER BY 1"),
    },
    recounted: {
      counts: read(`
        SELECT tenant_id, state, count(*) AS count, coalesce(sum(${DURATION} THEN completed_at - fired_at END), 0) AS duration_sum_ms,
          count(${DURATION} THEN 1 END) AS duration_count
        FROM timer_schedules GROUP BY 1, 2 ORDER BY 1, 2`),
      dueTenants: read(`
        SELECT tenant_id, min(due_at) AS earliest_due_at FROM timer_schedules WHERE state = 'Scheduled' GROUP BY 1 ORDER BY 1`),
    },
  };
}

describe(`SQLite tallies (seed ${seed})`, () => {
  it("when commands, firings, deadlines, sweeps, retention and imports run in any mix, then timer_state_counts and timer_due_tenants equal a recount", async () => {
    let runs = 0;
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 10, maxLength: 60 }), async (steps) => {
        const path = join(folder, `${++runs}.db`);
        const store = await openSqliteTimerStore({ path, writerThread: false });
        try {
          let nowMs = T0;
          for (const s of steps) {
            if (s.kind === "advance") nowMs += s.ms;
            await run(store, path, s, nowMs);
            const { kept, recounted } = talliesAndRecount(store.database);
            expect(kept, `after ${s.kind}`).toEqual(recounted);
          }
          for (const row of store.database.prepare("SELECT DISTINCT state FROM timer_schedules").pluck().all()) seen.add(String(row));
        } finally {
          await store.close();
          rmSync(path, { force: true });
        }
      }),
      { seed, numRuns: 60 },
    );
    // The mix reached every state the counts keep apart.
    expect([...seen].sort()).toEqual(["Cancelled", "Completed", "Failed", "Fired", "Missed", "Reached", "Scheduled", "TimedOut"]);
  });
});
