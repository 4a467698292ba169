import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MemoryTimerStore } from "../../src/adapters/memory/memory-timer-store.js";
import type { DeadlineRecord, DueCursor, DueTimer, Firing, TimerStore } from "../../src/app/timer-store.js";
import type { TimerAfterDeadline } from "../../src/domain/delivery-rules.js";
import type { TimerAfterFiring } from "../../src/domain/firing-rules.js";
import type { TimerKey } from "../../src/domain/timer.js";
import type { CancelTimerCommand, RetryTimerCommand, ScheduleTimerCommand, TimerCommand } from "../../src/domain/timer-command.js";
import type { DecideRules } from "../../src/app/command-batch.js";
import { advanceDueCursor } from "../../src/app/firing/fair-due-selection.js";

/*
 * The contract of the `TimerStore` port, in three groups; a store's wiring file calls each group
 * that applies to it, so that no case is skipped at run time:
 *
 * | group                                | memory | SQLite | Postgres |
 * |--------------------------------------|--------|--------|----------|
 * | describeTimerStoreContract           | yes    | yes    | yes      |
 * | describeDurableTimerStoreContract    | –      | yes    | yes      |
 * | describeSharedTimerStoreContract     | yes    | –      | yes      |
 *
 * - Durable: what survives closing and reopening the storage. The memory store keeps nothing.
 * - Shared: claims that keep one owner's due timers and deadlines from another owner until the
 *   lease ends. SQLite serves one instance (the consumer lease guarantees it), so it does not
 *   record claims; the memory store records them, as the reference of the multi-instance rules.
 */

/** A store under test. */
export interface TimerStoreHarness {
  readonly store: TimerStore;
  readonly cleanup: () => Promise<void>;
}

/** A durable store: `reopen` opens the same storage again. */
export interface DurableTimerStoreHarness extends TimerStoreHarness {
  readonly reopen: () => Promise<TimerStore>;
}

const NOW = 1_764_108_000_000;
const TENANT = "acme";
const OWNER = "instance-a";
const CLAIM_TTL_MS = 30_000;

const decideAt = (nowMs: number): DecideRules => ({ nowMs });

function schedule(serviceCallId: string, dueAtMs: number, fields: Partial<ScheduleTimerCommand> = {}): ScheduleTimerCommand {
  const defaults = { tenantId: TENANT, data: null, correlationId: null, timestampMs: 1 };
  return { kind: "schedule", ...defaults, serviceCallId, dueAtMs, ...fields };
}

function cancel(serviceCallId: string, fields: Partial<CancelTimerCommand> = {}): CancelTimerCommand {
  return { kind: "cancel", tenantId: TENANT, serviceCallId, correlationId: null, timestampMs: 1, ...fields };
}

function retry(serviceCallId: string, timestampMs: number): RetryTimerCommand {
  return { kind: "retry", tenantId: TENANT, serviceCallId, correlationId: null, timestampMs };
}

/** A firing of `read` (its dueAt and generation are the guard) that leaves the timer as `next` says. */
function firing(read: DueTimer, next: Partial<TimerAfterFiring>): Firing {
  const { tenantId, serviceCallId, dueAtMs, generation } = read;
  return {
    tenantId,
    serviceCallId,
    dueAtMs,
    generation,
    next: {
      state: "Reached",
      dueAtMs,
      occurrence: read.occurrence,
      reachedAtMs: null,
      commandTs: read.commandTs,
      updatedAtMs: NOW,
      ...next,
    },
  };
}

function keyOf({ tenantId, serviceCallId }: TimerKey): TimerKey {
  return { tenantId, serviceCallId };
}

/** The harness and store of the running test; `store` changes when a durable store is reopened. */
interface StoreUnderTest<H extends TimerStoreHarness> {
  harness: H;
  store: TimerStore;
}

/** Opens a store before each test of the enclosing `describe` and cleans it up after. */
function useStore<H extends TimerStoreHarness>(open: () => Promise<H>): StoreUnderTest<H> {
  const current = {} as StoreUnderTest<H>;
  beforeEach(async () => {
    current.harness = await open();
    current.store = current.harness.store;
  });
  afterEach(async () => {
    await current.harness.cleanup();
  });
  return current;
}

const key = (serviceCallId: string, tenantId = TENANT): TimerKey => ({ tenantId, serviceCallId });

const applyTo = (store: TimerStore, ...commands: TimerCommand[]) => store.applyCommands(commands, decideAt(NOW));

const claimOn = (store: TimerStore, nowMs: number, limit: number, after?: DueCursor, owner = OWNER): Promise<DueTimer[]> =>
  store.claimDue({ nowMs, limit, owner, leaseUntilMs: nowMs + CLAIM_TTL_MS, ...(after === undefined ? {} : { after }) });

/** Records firings that end the timers `Reached` at `reachedAtMs`, as a one-shot's publish does. */
const markReachedOn = (store: TimerStore, timers: readonly DueTimer[], reachedAtMs: number, owner: string): Promise<TimerKey[]> =>
  store.recordFirings(
    timers.map((t) => firing(t, { state: "Reached", reachedAtMs, updatedAtMs: reachedAtMs })),
    owner,
  );

const TRACKED = { maxRetries: 1, backoffMs: 100, completionTimeoutMs: 1_000 };

/**
 * Schedules a tracked timer per entry, due now, and records its first publish as the due worker
 * does: `Fired`, attempt 1, its completion deadline at the given instant.
 */
async function fireTracked(store: TimerStore, deadlines: Readonly<Record<string, number>>): Promise<void> {
  await applyTo(store, ...Object.keys(deadlines).map((id) => schedule(id, NOW, { delivery: TRACKED })));
  const due = await claimOn(store, NOW, 1_000);
  const fired = await store.recordFirings(
    due.map((t) =>
      firing(t, { state: "Fired", reachedAtMs: NOW, tracking: { attempt: 1, firedAtMs: NOW, deadlineAtMs: deadlines[t.serviceCallId]! } }),
    ),
    OWNER,
  );
  expect(fired).toHaveLength(Object.keys(deadlines).length);
}

const claimDeadlinesOn = (store: TimerStore, nowMs: number, limit: number, owner = OWNER) =>
  store.claimDeadlines({ nowMs, limit, owner, leaseUntilMs: nowMs + CLAIM_TTL_MS });

/** A record of what a passed deadline made of `read` (its attempt and deadline are the guard). */
function deadlineRecord(
  read: { readonly serviceCallId: string; readonly attempt: number; readonly deadlineAtMs: number },
  next: Partial<TimerAfterDeadline>,
): DeadlineRecord {
  return {
    tenantId: TENANT,
    serviceCallId: read.serviceCallId,
    attempt: read.attempt,
    deadlineAtMs: read.deadlineAtMs,
    next: {
      state: "Fired",
      attempt: read.attempt,
      reachedAtMs: NOW,
      deadlineAtMs: read.deadlineAtMs + TRACKED.backoffMs,
      lastReason: "timeout",
      updatedAtMs: read.deadlineAtMs,
      ...next,
    },
  };
}

const CRON = {
  cron: "30 2 * * *",
  timezone: "Europe/Berlin",
  untilMs: NOW + 86_400_000 * 30,
  maxOccurrences: 12,
  firstDueAtMs: NOW + 1_000,
};

/** Stores a cron timer with a lateness bound and a plain one. */
async function storeRecurring(store: TimerStore): Promise<void> {
  await applyTo(store, schedule("cron", NOW + 1_000, { repeat: CRON, maxLatenessMs: 0 }), schedule("plain", NOW + 2_000));
}

async function expectRecurring(store: TimerStore): Promise<void> {
  expect(await store.get(key("cron"))).toMatchObject({ repeat: CRON, occurrence: 1, maxLatenessMs: 0 });
  expect(await store.get(key("plain"))).toMatchObject({ repeat: null, occurrence: 1, maxLatenessMs: null });
}

/** A tracked timer that ended `Failed` after one publish (its consumer's report), then retried. */
async function failAndRetry(store: TimerStore): Promise<void> {
  await applyTo(
    store,
    schedule("work", NOW - 1, { delivery: { maxRetries: 0, backoffMs: 100, completionTimeoutMs: 1_000 }, createdVia: "api" }),
  );
  const [due] = await claimOn(store, NOW, 10);
  await store.recordFirings(
    [firing(due!, { state: "Fired", reachedAtMs: NOW, tracking: { attempt: 1, firedAtMs: NOW, deadlineAtMs: NOW + 1_000 } })],
    OWNER,
  );
  await applyTo(store, { kind: "fail", tenantId: TENANT, serviceCallId: "work", reason: "boom", correlationId: null, timestampMs: 2 });
  expect(await store.get(key("work"))).toMatchObject({ state: "Failed", lastReason: "boom" });
  await applyTo(store, retry("work", 3));
}

async function expectRetriedUntracked(store: TimerStore): Promise<void> {
  const timer = await store.get(key("work"));
  expect(timer).toMatchObject({ state: "Scheduled", dueAtMs: 3, generation: 2, lastReason: "boom", createdVia: "api" });
  expect(timer?.attempt).toBeUndefined();
  expect(timer?.firedAtMs).toBeUndefined();
  expect(timer?.deadlineAtMs).toBeUndefined();
}

/** The cases every adapter of `TimerStore` passes. */
export function describeTimerStoreContract(name: string, open: () => Promise<TimerStoreHarness>): void {
  describe(`${name} satisfies the TimerStore contract`, () => {
    const current = useStore(open);
    let store: TimerStore;
    beforeEach(() => {
      store = current.store;
    });

    const apply = (...commands: TimerCommand[]) => applyTo(store, ...commands);
    const claim = (nowMs: number, limit: number, after?: DueCursor, owner = OWNER): Promise<DueTimer[]> =>
      claimOn(store, nowMs, limit, after, owner);
    const markReached = (timers: readonly DueTimer[], reachedAtMs: number, owner: string): Promise<TimerKey[]> =>
      markReachedOn(store, timers, reachedAtMs, owner);

    /** Fires the timers due at `nowMs` as the poller does: read, then mark. */
    async function fireDue(nowMs: number): Promise<TimerKey[]> {
      return markReached(await claim(nowMs, 1000), nowMs, OWNER);
    }

    describe("applyCommands", () => {
      it("when a ScheduleTimer names an unknown key, then a Scheduled timer is stored", async () => {
        const command = schedule("call-1", NOW + 60_000, { data: '{"a":1}', correlationId: "req-1", timestampMs: 7 });

        const decisions = await apply(command);

        expect(decisions.map((d) => d.outcome)).toEqual(["accepted"]);
        expect(await store.get(key("call-1"))).toEqual({
          tenantId: TENANT,
          serviceCallId: "call-1",
          state: "Scheduled",
          dueAtMs: NOW + 60_000,
          data: '{"a":1}',
          correlationId: "req-1",
          commandTs: 7,
          generation: 1,
          registeredAtMs: NOW,
          reachedAtMs: null,
          updatedAtMs: NOW,
          repeat: null,
          occurrence: 1,
          maxLatenessMs: null,
        });
      });

      it("when a Scheduled timer is rescheduled, then dueAt, data and correlationId are replaced", async () => {
        await apply(schedule("call-1", NOW + 100, { data: '{"v":1}', correlationId: "req-1", timestampMs: 1 }));
        await store.applyCommands(
          [schedule("call-1", NOW + 200, { data: '{"v":2}', correlationId: null, timestampMs: 2 })],
          decideAt(NOW + 10),
        );

        expect(await store.get(key("call-1"))).toMatchObject({
          state: "Scheduled",
          dueAtMs: NOW + 200,
          data: '{"v":2}',
          correlationId: null,
          commandTs: 2,
          registeredAtMs: NOW,
          updatedAtMs: NOW + 10,
        });
        expect(await claim(NOW + 150, 10)).toEqual([]);
        expect((await claim(NOW + 200, 10)).map(keyOf)).toEqual([key("call-1")]);
      });

      it("when commands for one key come in one call, then each sees the effect of the ones before", async () => {
        const decisions = await apply(
          schedule("call-1", NOW, { timestampMs: 1 }),
          cancel("call-1", { timestampMs: 2 }),
          cancel("call-2", { timestampMs: 5 }),
          schedule("call-2", NOW, { timestampMs: 4 }),
        );

        expect(decisions.map((d) => d.outcome)).toEqual(["accepted", "accepted", "accepted", "ignored"]);
        expect(decisions[1]?.previous?.state).toBe("Scheduled");
        expect(decisions[3]?.previous?.state).toBe("Cancelled");
        expect(await store.get(key("call-1"))).toMatchObject({ state: "Cancelled", dueAtMs: NOW, commandTs: 2 });
        expect(await store.get(key("call-2"))).toMatchObject({ state: "Cancelled", dueAtMs: null, commandTs: 5 });
      });

      it("when a call is made before the one before it resolved, then it takes effect after that one", async () => {
        // The first call is the longer one: a store that ran both at once would likely commit the second first.
        const bulk = Array.from({ length: 2_000 }, (_, i) => schedule(`bulk-${i}`, NOW + 60_000));
        const first = store.applyCommands([...bulk, schedule("x", NOW + 1_000, { timestampMs: 5 })], decideAt(NOW));
        const second = store.applyCommands([schedule("x", NOW + 2_000, { timestampMs: 5 })], decideAt(NOW));

        const [, decisions] = await Promise.all([first, second]);

        expect(decisions.map((d) => d.outcome)).toEqual(["accepted"]);
        expect(await store.get(key("x"))).toMatchObject({ dueAtMs: NOW + 2_000, generation: 2 });
      });

      it("when decisions are returned, then they are in command order", async () => {
        const decisions = await apply(schedule("b", NOW + 2), schedule("a", NOW + 1), cancel("c"));

        expect(decisions.map((d) => [d.next?.state, d.next?.dueAtMs])).toEqual([
          ["Scheduled", NOW + 2],
          ["Scheduled", NOW + 1],
          ["Cancelled", null],
        ]);
      });

      it("when a decision is ignored without next, then nothing is written", async () => {
        await apply(schedule("call-1", NOW + 100, { timestampMs: 5 }));
        const before = await store.get(key("call-1"));

        const staleCommand = schedule("call-1", NOW + 999, { timestampMs: 3 });
        const stale = await store.applyCommands([staleCommand], decideAt(NOW + 50));
        // Beyond retention (CONTRACT §7): ignored without reading the key.
        const beyond = await store.applyCommands([schedule("call-2", NOW, { timestampMs: NOW - 2_000 })], {
          nowMs: NOW,
          retentionMs: 1_000,
        });

        expect(stale[0]).toMatchObject({ outcome: "ignored", previous: { state: "Scheduled", dueAtMs: NOW + 100 } });
        expect(stale[0]?.next).toBeUndefined();
        expect(beyond).toEqual([{ outcome: "ignored", previous: undefined }]);
        expect(await store.get(key("call-1"))).toEqual(before);
        expect(await store.get(key("call-2"))).toBeUndefined();
      });

      it("when an ignored decision carries next, then next is stored", async () => {
        await apply(schedule("call-1", NOW + 100, { timestampMs: 5 }));
        await store.applyCommands([schedule("call-1", NOW + 100, { timestampMs: 9 })], decideAt(NOW + 50));

        expect(await store.get(key("call-1"))).toMatchObject({
          state: "Scheduled",
          commandTs: 9,
          updatedAtMs: NOW + 50,
        });
      });

      it("when a decision carries next, then exactly next is stored", async () => {
        await apply(schedule("call-1", NOW + 100, { data: "1", correlationId: "c" }));
        const repeat = { cron: "0 9 * * MON-FRI", timezone: "Europe/Berlin", untilMs: NOW + 7, maxOccurrences: 8, firstDueAtMs: NOW + 1 };

        await store.applyCommands(
          [schedule("call-1", NOW + 1, { data: "2", correlationId: "d", timestampMs: 3, repeat, maxLatenessMs: 30_000 })],
          decideAt(NOW + 6),
        );

        expect(await store.get(key("call-1"))).toEqual({
          tenantId: TENANT,
          serviceCallId: "call-1",
          state: "Scheduled",
          dueAtMs: NOW + 1,
          data: "2",
          correlationId: "d",
          commandTs: 3,
          generation: 2,
          registeredAtMs: NOW,
          reachedAtMs: null,
          updatedAtMs: NOW + 6,
          repeat,
          occurrence: 1,
          maxLatenessMs: 30_000,
        });
      });

      it("when the same serviceCallId is used by two tenants, then they are two timers", async () => {
        await apply(schedule("shared", NOW + 1, { tenantId: "acme" }), schedule("shared", NOW + 2, { tenantId: "globex" }));
        await apply(cancel("shared", { tenantId: "acme", timestampMs: 2 }));

        expect(await store.get(key("shared", "acme"))).toMatchObject({ state: "Cancelled", dueAtMs: NOW + 1 });
        expect(await store.get(key("shared", "globex"))).toMatchObject({ state: "Scheduled", dueAtMs: NOW + 2 });
        expect((await claim(NOW + 10, 10)).map(keyOf)).toEqual([key("shared", "globex")]);
      });

      it("when a CancelTimer names an unknown key, then a tombstone without dueAt round trips", async () => {
        await apply(cancel("ghost", { timestampMs: 10 }));

        expect(await store.get(key("ghost"))).toEqual({
          tenantId: TENANT,
          serviceCallId: "ghost",
          state: "Cancelled",
          dueAtMs: null,
          data: null,
          correlationId: null,
          commandTs: 10,
          generation: 1,
          registeredAtMs: NOW,
          reachedAtMs: null,
          updatedAtMs: NOW,
          repeat: null,
          occurrence: 1,
          maxLatenessMs: null,
        });
        expect(await claim(Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
        expect(await store.nextDueAt()).toBeNull();

        await apply(schedule("ghost", NOW, { timestampMs: 11 }));
        expect(await store.get(key("ghost"))).toMatchObject({ state: "Scheduled", dueAtMs: NOW });
      });
    });

    describe("trace context (CONTRACT §13)", () => {
      const trace = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", traceFlags: 1, traceState: "k=v,o=1", spanId: "00f067aa0ba902b7" };
      const stored = { traceId: trace.traceId, traceFlags: 1, traceState: "k=v,o=1", traceSpanId: trace.spanId };

      it("when a ScheduleTimer carries a trace, then get and claimDue return it; a later change replaces it", async () => {
        await apply(schedule("t", NOW - 1, { trace }));
        expect(await store.get(key("t"))).toMatchObject(stored);
        expect((await claim(NOW, 10))[0]).toMatchObject(stored);
        const later = { ...trace, traceId: "5bf92f3577b34da6a3ce929d0e0e4736", traceFlags: 0, traceState: null, spanId: null };
        await store.applyCommands([schedule("t", NOW + 5, { timestampMs: 2, trace: later })], decideAt(NOW));
        expect(await store.get(key("t"))).toMatchObject({ traceId: later.traceId, traceFlags: 0 });
      });
    });

    describe("claimDue", () => {
      it("when timers are due, then each tenant's come oldest first (dueAt, then serviceCallId), tenants dealt round-robin by their earliest due time", async () => {
        await apply(
          schedule("x", NOW - 10, { tenantId: "t-b" }),
          schedule("y", NOW - 10, { tenantId: "t-a" }),
          schedule("w", NOW - 5, { tenantId: "t-a" }),
          schedule("x", NOW - 10, { tenantId: "t-a" }),
          schedule("z", NOW - 20, { tenantId: "t-b" }),
        );

        const due = await claim(NOW, 10);

        expect(due.map((t) => `${t.dueAtMs - NOW}/${t.tenantId}/${t.serviceCallId}`)).toEqual([
          "-20/t-b/z",
          "-10/t-a/x",
          "-10/t-b/x",
          "-10/t-a/y",
          "-5/t-a/w",
        ]);
      });

      it("when serviceCallIds hold astral and high BMP characters, then they are ordered by code point", async () => {
        const ids = ["😀", "\uFFFD", "z", "\uE000", "é", "😀a"];
        await apply(...ids.map((id) => schedule(id, NOW)));

        const due = await claim(NOW, 10);

        expect(due.map((t) => t.serviceCallId)).toEqual(["z", "é", "\uE000", "\uFFFD", "😀", "😀a"]);
      });

      it("when more timers are due than the limit, then only the first `limit` are returned", async () => {
        await apply(...[5, 3, 1, 4, 2].map((n) => schedule(`call-${n}`, NOW - 10 + n)));

        const due = await claim(NOW, 3);

        expect(due.map((t) => t.serviceCallId)).toEqual(["call-1", "call-2", "call-3"]);
      });

      it("when paging with the chain's cursor, then every due timer comes once, each tenant's oldest first", async () => {
        const commands = Array.from({ length: 23 }, (_, i) =>
          schedule(`call-${i}`, NOW - 30 + (i % 3) * 10, { tenantId: i % 2 === 0 ? "t-a" : "t-b" }),
        );
        await apply(...commands);

        const seen: DueTimer[] = [];
        let cursor: DueCursor | undefined;
        for (;;) {
          const page = await claim(NOW, 4, cursor);
          seen.push(...page);
          cursor = advanceDueCursor(cursor, page);
          if (page.length < 4) break;
        }

        const ids = seen.map((t) => `${t.tenantId}/${t.serviceCallId}`);
        expect(ids).toHaveLength(23);
        expect(new Set(ids).size).toBe(23);
        for (const tenantId of ["t-a", "t-b"]) {
          const dues = seen.filter((t) => t.tenantId === tenantId).map((t) => t.dueAtMs);
          expect(dues).toEqual([...dues].sort((a, b) => a - b));
        }
      });

      it("when one tenant has a backlog due and another tenant's timer comes due later, then one claim takes both tenants' timers", async () => {
        await apply(...Array.from({ length: 50 }, (_, i) => schedule(`a-${String(i).padStart(2, "0")}`, NOW - 1_000, { tenantId: "t-a" })));
        await apply(schedule("b-late", NOW - 10, { tenantId: "t-b" }), schedule("b-later", NOW - 5, { tenantId: "t-b" }));

        const due = await claim(NOW, 10);

        expect(due).toHaveLength(10);
        expect(due.filter((t) => t.tenantId === "t-b").map((t) => t.serviceCallId)).toEqual(["b-late", "b-later"]);
        expect(due.filter((t) => t.tenantId === "t-a").map((t) => t.serviceCallId)).toEqual(
          Array.from({ length: 8 }, (_, i) => `a-${String(i).padStart(2, "0")}`),
        );
        // Round-robin: every tenant's first timer comes before any tenant's second.
        expect(
          due
            .slice(0, 2)
            .map((t) => t.tenantId)
            .sort(),
        ).toEqual(["t-a", "t-b"]);
      });

      it("when tenants schedule, cancel and fire timers, then countScheduledOf gives each tenant's Scheduled count, 0 for none", async () => {
        await apply(
          schedule("a1", NOW - 10, { tenantId: "t-a" }),
          schedule("a2", NOW + 60_000, { tenantId: "t-a" }),
          schedule("a3", NOW + 60_000, { tenantId: "t-a" }),
          schedule("b1", NOW + 60_000, { tenantId: "t-b" }),
        );
        await apply(cancel("a3", { tenantId: "t-a", timestampMs: 2 }));
        await fireDue(NOW);

        const counts = await store.countScheduledOf(["t-a", "t-b", "t-none"]);

        expect([counts.get("t-a"), counts.get("t-b"), counts.get("t-none") ?? 0]).toEqual([1, 1, 0]);
      });

      it("when many tenants have timers due, then a claim takes one of each before a second of any", async () => {
        await apply(
          ...Array.from({ length: 30 }, (_, i) =>
            schedule(`c-${i % 3}`, NOW - 100 + i, { tenantId: `tenant-${String(Math.floor(i / 3)).padStart(2, "0")}` }),
          ),
        );

        const due = await claim(NOW, 10);

        expect(new Set(due.map((t) => t.tenantId)).size).toBe(10);
        const rest = await claim(NOW, 100);
        expect(rest.length + due.length).toBeGreaterThanOrEqual(30);
      });

      it("when a tenant's due timers were all fired or cancelled, then it takes no place from a tenant with due timers", async () => {
        await apply(...Array.from({ length: 5 }, (_, i) => schedule(`gone-${i}`, NOW - 500, { tenantId: `idle-${i}` })));
        await fireDue(NOW);
        await apply(...Array.from({ length: 5 }, (_, i) => cancel(`never-${i}`, { tenantId: `idle-${i}` })));
        await apply(schedule("wanted", NOW - 1, { tenantId: "busy" }));

        expect((await claim(NOW, 1)).map((t) => t.serviceCallId)).toEqual(["wanted"]);
      });

      it("when a timer is Reached, Cancelled or not yet due, then it is left out; one due now is in", async () => {
        await apply(schedule("reached", NOW - 100), schedule("cancelled", NOW - 50), cancel("tombstone"));
        await fireDue(NOW - 100);
        await apply(
          cancel("cancelled", { timestampMs: 2 }),
          schedule("due-now", NOW),
          schedule("due-later", NOW + 1),
          schedule("overdue", NOW - 1),
        );

        const due = await claim(NOW, 10);

        expect(due.map((t) => t.serviceCallId)).toEqual(["overdue", "due-now"]);
      });
    });

    describe("recordFirings: one-shot timers end Reached", () => {
      it("when due timers are marked, then they are Reached at reachedAt and no longer due", async () => {
        await apply(schedule("call-1", NOW - 10, { data: '{"x":1}', correlationId: "req-1" }), schedule("call-2", NOW));
        const due = await claim(NOW, 10);

        const marked = await markReached(due, NOW + 7, OWNER);

        expect(marked).toEqual([key("call-1"), key("call-2")]);
        expect(await store.get(key("call-1"))).toMatchObject({
          state: "Reached",
          dueAtMs: NOW - 10,
          data: '{"x":1}',
          correlationId: "req-1",
          reachedAtMs: NOW + 7,
          updatedAtMs: NOW + 7,
        });
        expect(await claim(NOW + 1000, 10)).toEqual([]);
        expect(await store.countScheduled()).toBe(0);
      });

      it("when a timer changed or was cancelled after it was read, then it is not marked", async () => {
        await apply(
          schedule("moved", NOW, { data: "1", correlationId: "c" }),
          schedule("new-data", NOW, { data: "1", correlationId: "c" }),
          schedule("new-correlation", NOW, { data: "1", correlationId: "c" }),
          schedule("cancelled", NOW, { data: "1", correlationId: "c" }),
          schedule("unchanged", NOW, { data: "1", correlationId: "c" }),
        );
        const due = await claim(NOW, 10);
        await apply(
          schedule("moved", NOW - 1, { data: "1", correlationId: "c", timestampMs: 2 }),
          schedule("new-data", NOW, { data: "2", correlationId: "c", timestampMs: 2 }),
          schedule("new-correlation", NOW, { data: "1", correlationId: null, timestampMs: 2 }),
          cancel("cancelled", { timestampMs: 2 }),
        );

        const marked = await markReached(due, NOW + 1, OWNER);

        expect(marked).toEqual([key("unchanged")]);
        expect(await store.get(key("moved"))).toMatchObject({ state: "Scheduled", dueAtMs: NOW - 1 });
        expect(await store.get(key("new-data"))).toMatchObject({ state: "Scheduled", data: "2" });
        expect(await store.get(key("new-correlation"))).toMatchObject({ state: "Scheduled", correlationId: null });
        expect(await store.get(key("cancelled"))).toMatchObject({ state: "Cancelled" });
        expect(await store.get(key("unchanged"))).toMatchObject({ state: "Reached", reachedAtMs: NOW + 1 });
      });

      it("when a timer without data and correlationId is marked, then it is Reached", async () => {
        await apply(schedule("bare", NOW));

        const marked = await markReached(await claim(NOW, 10), NOW, OWNER);

        expect(marked).toEqual([key("bare")]);
        expect(await store.get(key("bare"))).toMatchObject({ state: "Reached", data: null, correlationId: null });
      });

      it("when a timer is marked twice, then the second call marks nothing and keeps the first reachedAt", async () => {
        await apply(schedule("call-1", NOW));
        const due = await claim(NOW, 10);
        await markReached(due, NOW + 1, OWNER);

        expect(await markReached(due, NOW + 2, OWNER)).toEqual([]);
        expect(await store.get(key("call-1"))).toMatchObject({ state: "Reached", reachedAtMs: NOW + 1 });
      });
    });

    describe("recordFirings: recurring timers, lateness", () => {
      const every = (everyMs: number, firstDueAtMs: number) => ({ everyMs, untilMs: null, maxOccurrences: null, firstDueAtMs });

      it("when a recurring timer is read with its series and its firing moves it on, then it stays Scheduled at the next occurrence", async () => {
        await apply(schedule("rec", NOW, { repeat: every(10_000, NOW), maxLatenessMs: 5_000 }));
        const [read] = await claim(NOW, 10);
        expect(read).toMatchObject({
          occurrence: 1,
          repeat: every(10_000, NOW),
          maxLatenessMs: 5_000,
          commandTs: 1,
          reachedAtMs: null,
          prefixCancelTs: null,
        });

        const recorded = await store.recordFirings(
          [firing(read!, { state: "Scheduled", dueAtMs: NOW + 10_000, occurrence: 2, reachedAtMs: NOW + 3 })],
          OWNER,
        );

        expect(recorded).toEqual([key("rec")]);
        expect(await store.get(key("rec"))).toMatchObject({
          state: "Scheduled",
          dueAtMs: NOW + 10_000,
          occurrence: 2,
          generation: 1,
          reachedAtMs: NOW + 3,
        });
        expect(await claim(NOW + 9_999, 10)).toEqual([]);
        expect((await claim(NOW + 10_000, 10)).map((t) => [t.dueAtMs, t.occurrence])).toEqual([[NOW + 10_000, 2]]);
        expect(await store.nextDueAt()).toBe(NOW + 10_000);
        expect(await store.countScheduled()).toBe(1);
      });

      it("when the same occurrence is recorded twice (a stale second record), then the timer advances once", async () => {
        await apply(schedule("rec", NOW, { repeat: every(1_000, NOW) }));
        const [read] = await claim(NOW, 10);
        const moveOn = firing(read!, { state: "Scheduled", dueAtMs: NOW + 1_000, occurrence: 2 });

        expect(await store.recordFirings([moveOn], OWNER)).toEqual([key("rec")]);
        expect(await store.recordFirings([moveOn], OWNER)).toEqual([]);
        expect(await store.get(key("rec"))).toMatchObject({ dueAtMs: NOW + 1_000, occurrence: 2 });
      });

      it("when a command moved commandTs after the timer was read, then the record keeps the newer commandTs", async () => {
        await apply(schedule("rec", NOW, { timestampMs: 1 }));
        const [read] = await claim(NOW, 10);
        await apply(schedule("rec", NOW, { timestampMs: 5 }));

        expect(await store.recordFirings([firing(read!, { reachedAtMs: NOW })], OWNER)).toEqual([key("rec")]);
        expect(await store.get(key("rec"))).toMatchObject({ state: "Reached", commandTs: 5 });
      });

      it("when a prefix cancel covering the timer was recorded after it was read, then only a cancelling firing is recorded", async () => {
        await apply(schedule("p:1", NOW, { timestampMs: 1 }), schedule("p:2", NOW, { timestampMs: 1 }));
        const [first, second] = await claim(NOW, 10);
        await apply({ kind: "cancelPrefix", tenantId: TENANT, serviceCallIdPrefix: "p:", correlationId: null, timestampMs: 3 });

        const recorded = await store.recordFirings(
          [firing(first!, { reachedAtMs: NOW }), firing(second!, { state: "Cancelled", commandTs: 3 })],
          OWNER,
        );

        expect(recorded).toEqual([key("p:2")]);
        expect(await store.get(key("p:1"))).toMatchObject({ state: "Scheduled", commandTs: 1 });
        expect(await store.get(key("p:2"))).toMatchObject({ state: "Cancelled", commandTs: 3 });
      });

      it("when a firing ends a timer Missed, then it is final and no longer due", async () => {
        await apply(schedule("late", NOW - 60_000, { maxLatenessMs: 1_000 }));
        const due = await claim(NOW, 10);

        await store.recordFirings(
          due.map((t) => firing(t, { state: "Missed", reachedAtMs: NOW })),
          OWNER,
        );

        expect(await store.get(key("late"))).toMatchObject({ state: "Missed", reachedAtMs: NOW, dueAtMs: NOW - 60_000 });
        expect(await store.countScheduled()).toBe(0);
        const again = await apply(schedule("late", NOW + 1, { timestampMs: 9 }), cancel("late", { timestampMs: 10 }));
        // A newer schedule of a closed timer is refused TIMER_FINAL (CONTRACT §17), a cancel ignored; neither changes it.
        expect(again.map((d) => d.outcome)).toEqual(["refused", "ignored"]);
      });

      it("when a rule, occurrence and lateness are stored, then they round trip through get", async () => {
        await storeRecurring(store);
        await expectRecurring(store);
      });
    });

    describe("RetryTimer (CONTRACT §14)", () => {
      it("when a Missed timer is retried, then it is Scheduled and due again at the retry's time, and claimDue returns it", async () => {
        await apply(schedule("late", NOW - 60_000, { maxLatenessMs: 1_000, correlationId: "c" }));
        const due = await claim(NOW, 10);
        await store.recordFirings(
          due.map((t) => firing(t, { state: "Missed", reachedAtMs: NOW })),
          OWNER,
        );

        const [decision] = await apply(retry("late", NOW + 5));

        expect(decision?.outcome).toBe("accepted");
        expect(await store.get(key("late"))).toMatchObject({
          state: "Scheduled",
          dueAtMs: NOW + 5,
          generation: 2,
          commandTs: NOW + 5,
          reachedAtMs: null,
          maxLatenessMs: null,
          correlationId: "c",
        });
        expect(await store.countScheduled()).toBe(1);
        expect((await claim(NOW + 5, 10)).map((t) => [t.serviceCallId, t.generation])).toEqual([["late", 2]]);
      });

      it("when a Failed tracked timer is retried, then its tracking of publishes is cleared", async () => {
        await failAndRetry(store);
        await expectRetriedUntracked(store);
      });

      it("when a Scheduled, Reached or Cancelled timer or an unknown key is retried, then nothing changes", async () => {
        await apply(schedule("s", NOW + 100), schedule("r", NOW - 1), cancel("c"));
        await store.recordFirings(
          (await claim(NOW, 10)).map((t) => firing(t, { reachedAtMs: NOW })),
          OWNER,
        );
        const before = await Promise.all(["s", "r", "c"].map((id) => store.get(key(id))));

        const decisions = await apply(retry("s", 50), retry("r", 50), retry("c", 50), retry("unknown", 50));

        expect(decisions.map((d) => d.outcome)).toEqual(["ignored", "ignored", "ignored", "ignored"]);
        expect(await Promise.all(["s", "r", "c"].map((id) => store.get(key(id))))).toEqual(before);
        expect(await store.get(key("unknown"))).toBeUndefined();
      });
    });

    describe("prefix cancels", () => {
      const cancelPrefix = (serviceCallIdPrefix: string, timestampMs: number, tenantId = TENANT): TimerCommand => ({
        kind: "cancelPrefix",
        tenantId,
        serviceCallIdPrefix,
        correlationId: null,
        timestampMs,
      });
      const sweepAll = async (prefix: string, limit: number, tenantId = TENANT): Promise<number> => {
        let batches = 0;
        for (;;) {
          batches++;
          const { done } = await store.sweepPrefixCancel({ tenantId, serviceCallIdPrefix: prefix }, limit, NOW);
          if (done) return batches;
        }
      };

      it("when a prefix cancel is applied, then it is recorded unfinished, and a re-sent or older one is ignored", async () => {
        const decisions = await apply(cancelPrefix("order-1:", 5), cancelPrefix("order-1:", 5), cancelPrefix("order-1:", 4));

        expect(decisions.map((d) => d.outcome)).toEqual(["accepted", "ignored", "ignored"]);
        expect(await store.unfinishedPrefixCancels()).toEqual([
          { tenantId: TENANT, serviceCallIdPrefix: "order-1:", commandTs: 5, progressKey: "" },
        ]);
      });

      it("when commands and due timers match a recorded prefix cancel, then decide and claimDue are told its newest timestamp", async () => {
        await apply(schedule("order-1:a", NOW, { timestampMs: 1 }), schedule("order-2:a", NOW, { timestampMs: 1 }), schedule("other", NOW));
        await apply(cancelPrefix("order-", 3), cancelPrefix("order-1:", 7), cancelPrefix("order-1:", 2, "globex"));
        // A key without a timer that a prefix cancel covers is as if cancelled then: not newer is ignored.
        const decisions = await apply(
          cancel("order-1:b", { timestampMs: 5 }),
          cancel("order-2:b", { timestampMs: 5 }),
          cancel("order-2:c", { timestampMs: 3 }),
          cancel("zzz", { timestampMs: 1 }),
        );
        const due = await claim(NOW, 10);

        // order-1:b is covered by 7 (not only 3), order-2:b and order-2:c by 3 only, zzz by none.
        expect(decisions.map((d) => d.outcome)).toEqual(["ignored", "accepted", "ignored", "accepted"]);
        expect(due.map((t) => [t.serviceCallId, t.prefixCancelTs])).toEqual([
          ["order-1:a", 7],
          ["order-2:a", 3],
          ["other", null],
        ]);
      });

      it("when a schedule follows a prefix cancel in the same call, then it sees the prefix cancel", async () => {
        const decisions = await apply(
          cancelPrefix("p:", 5),
          schedule("p:late", NOW, { timestampMs: 5 }),
          schedule("p:new", NOW, { timestampMs: 6 }),
        );

        expect(decisions.map((d) => d.outcome)).toEqual(["accepted", "ignored", "accepted"]);
        expect(await store.get(key("p:late"))).toBeUndefined();
        expect(await store.get(key("p:new"))).toMatchObject({ state: "Scheduled", commandTs: 6 });
      });

      it("when a prefix cancel is swept in small batches, then exactly the matching older timers are cancelled, and it finishes", async () => {
        const ids = ["p", "p:", "p:1", "p:10", "p:2", "p:\u{10FFFF}", "p:😀", "p;", "o", "q:1"];
        await apply(...ids.map((id) => schedule(id, NOW + 1_000, { timestampMs: 1 })));
        await apply(schedule("p:newer", NOW + 1_000, { timestampMs: 9 }), schedule("p:x", NOW + 1_000, { tenantId: "globex" }));
        await apply(cancelPrefix("p:", 5));

        const batches = await sweepAll("p:", 2);

        const states = Object.fromEntries(
          await Promise.all([...ids, "p:newer"].map(async (id) => [id, (await store.get(key(id)))?.state])),
        );
        expect(states).toEqual({
          p: "Scheduled",
          "p:": "Cancelled",
          "p:1": "Cancelled",
          "p:10": "Cancelled",
          "p:2": "Cancelled",
          "p:\u{10FFFF}": "Cancelled",
          "p:😀": "Cancelled",
          "p;": "Scheduled",
          o: "Scheduled",
          "q:1": "Scheduled",
          "p:newer": "Scheduled",
        });
        expect(await store.get(key("p:1"))).toMatchObject({ commandTs: 5 });
        expect(await store.get(key("p:x", "globex"))).toMatchObject({ state: "Scheduled" });
        expect(batches).toBe(4);
        expect(await store.unfinishedPrefixCancels()).toEqual([]);
        expect(await store.sweepPrefixCancel({ tenantId: TENANT, serviceCallIdPrefix: "p:" }, 2, NOW)).toEqual({
          decisions: [],
          done: true,
        });
      });

      it("when a newer prefix cancel of the same prefix arrives mid-sweep, then the sweep starts over with its timestamp", async () => {
        await apply(...["n:1", "n:2", "n:3"].map((id) => schedule(id, NOW + 1_000, { timestampMs: 1 })));
        await apply(cancelPrefix("n:", 2));
        await store.sweepPrefixCancel({ tenantId: TENANT, serviceCallIdPrefix: "n:" }, 2, NOW);
        await apply(cancelPrefix("n:", 4));

        await sweepAll("n:", 2);

        expect((await Promise.all(["n:1", "n:2", "n:3"].map((id) => store.get(key(id))))).map((t) => t?.commandTs)).toEqual([4, 4, 4]);
      });
    });

    describe("generation", () => {
      it("when a timer is created, changed, re-sent, cancelled and re-armed, then its generation counts the versions", async () => {
        await apply(schedule("call-1", NOW + 100, { timestampMs: 1 }));
        expect((await store.get(key("call-1")))?.generation).toBe(1);

        await apply(schedule("call-1", NOW + 100, { data: '{"v":2}', timestampMs: 2 }));
        await apply(schedule("call-1", NOW + 100, { data: '{"v":2}', timestampMs: 3 }));
        expect(await store.get(key("call-1"))).toMatchObject({ generation: 2, commandTs: 3 });

        await apply(cancel("call-1", { timestampMs: 4 }));
        expect(await store.get(key("call-1"))).toMatchObject({ state: "Cancelled", generation: 2 });

        await apply(schedule("call-1", NOW + 100, { data: '{"v":2}', timestampMs: 5 }));
        expect(await store.get(key("call-1"))).toMatchObject({ state: "Scheduled", generation: 3 });
        expect((await claim(NOW + 100, 10)).map((t) => t.generation)).toEqual([3]);
      });

      it("when the same dueAt is read at one generation and marked at another, then it is not marked", async () => {
        await apply(schedule("call-1", NOW, { data: "1", timestampMs: 1 }));
        const [read] = await claim(NOW, 10);

        const marked = await markReached([{ ...read!, generation: read!.generation + 1 }], NOW, OWNER);

        expect(marked).toEqual([]);
        expect(await store.get(key("call-1"))).toMatchObject({ state: "Scheduled" });
      });
    });

    describe("claims", () => {
      const OTHER = "instance-b";

      it("when claims are released by an owner that holds none, then nothing changes", async () => {
        await apply(schedule("a", NOW));
        await claim(NOW, 10);

        await store.releaseClaims(OTHER);

        expect((await claim(NOW, 10)).map((t) => t.serviceCallId)).toEqual(["a"]);
      });
    });

    describe("deadlines of Fired timers (CONTRACT §11)", () => {
      it("when tracked timers are Fired, then nextDeadlineAt is the earliest deadline, and null once none is Fired", async () => {
        expect(await store.nextDeadlineAt()).toBeNull();
        await apply(schedule("untracked", NOW));
        await fireDue(NOW);
        expect(await store.nextDeadlineAt()).toBeNull();

        await fireTracked(store, { a: NOW + 3_000, b: NOW + 1_000, c: NOW + 2_000 });

        expect(await store.nextDeadlineAt()).toBe(NOW + 1_000);
        const [b] = await claimDeadlinesOn(store, NOW + 1_000, 10);
        expect(await store.recordDeadlines([deadlineRecord(b!, { state: "TimedOut", deadlineAtMs: null })], OWNER)).toEqual([key("b")]);
        expect(await store.nextDeadlineAt()).toBe(NOW + 2_000);
      });

      it("when deadlines have passed, then claimDeadlines returns those Fired timers oldest deadline first, up to the limit", async () => {
        await apply(schedule("scheduled", NOW + 60_000));
        await fireTracked(store, { a: NOW + 3_000, b: NOW + 1_000, c: NOW + 2_000 });

        const passed = await claimDeadlinesOn(store, NOW + 2_000, 10);

        expect(passed.map((t) => [t.serviceCallId, t.attempt, t.deadlineAtMs])).toEqual([
          ["b", 1, NOW + 1_000],
          ["c", 1, NOW + 2_000],
        ]);
        expect(passed[0]).toMatchObject({ tenantId: TENANT, dueAtMs: NOW, generation: 1, delivery: TRACKED });
        expect((await claimDeadlinesOn(store, NOW + 3_000, 1)).map((t) => t.serviceCallId)).toEqual(["b"]);
        expect(await claimDeadlinesOn(store, NOW + 999, 10)).toEqual([]);
      });

      it("when a passed deadline is recorded, then the timer takes the new columns, and a second record of the same read changes nothing", async () => {
        await fireTracked(store, { a: NOW + 1_000 });
        const [read] = await claimDeadlinesOn(store, NOW + 1_000, 10);
        const record = deadlineRecord(read!, {});

        expect(await store.recordDeadlines([record], OWNER)).toEqual([key("a")]);
        expect(await store.recordDeadlines([record], OWNER)).toEqual([]);
        expect(await store.get(key("a"))).toMatchObject({
          state: "Fired",
          attempt: 1,
          deadlineAtMs: NOW + 1_100,
          lastReason: "timeout",
        });
        expect(await store.nextDeadlineAt()).toBe(NOW + 1_100);
        expect((await claimDeadlinesOn(store, NOW + 1_100, 10)).map((t) => [t.serviceCallId, t.deadlineAtMs])).toEqual([
          ["a", NOW + 1_100],
        ]);
      });

      it("when a record names another attempt or a timer that is no longer Fired, then it is refused", async () => {
        await fireTracked(store, { a: NOW + 1_000, b: NOW + 1_000 });
        const [a, b] = await claimDeadlinesOn(store, NOW + 1_000, 10);
        await applyTo(store, { kind: "complete", tenantId: TENANT, serviceCallId: "b", result: null, correlationId: null, timestampMs: 2 });

        expect(await store.recordDeadlines([{ ...deadlineRecord(a!, {}), attempt: 2 }, deadlineRecord(b!, {})], OWNER)).toEqual([]);
        expect(await store.get(key("a"))).toMatchObject({ state: "Fired", deadlineAtMs: NOW + 1_000 });
        expect(await store.get(key("b"))).toMatchObject({ state: "Completed" });
        expect((await claimDeadlinesOn(store, NOW + 1_000, 10)).map((t) => t.serviceCallId)).toEqual(["a"]);
      });
    });

    /**
     * The memory store is the reference: the same calls on it and on the store under test give the
     * same results (recurring timers, prefix cancels and their sweep, recordFirings).
     */
    describe("the same results as the memory store", () => {
      const schedule5 = (serviceCallId: string, fields: Partial<ScheduleTimerCommand> = {}) =>
        schedule(serviceCallId, NOW, { timestampMs: 5, ...fields });
      const cancelPrefix = (serviceCallIdPrefix: string, timestampMs: number): TimerCommand => ({
        kind: "cancelPrefix",
        tenantId: TENANT,
        serviceCallIdPrefix,
        correlationId: null,
        timestampMs,
      });
      const decide = decideAt(NOW);

      async function same(scenario: (s: TimerStore) => Promise<unknown>): Promise<void> {
        const memory = new MemoryTimerStore();
        const expected = await scenario(memory);
        expect(await scenario(store)).toEqual(expected);
      }

      it("when a recurring timer with a lateness bound is stored, then repeat, occurrence and maxLatenessMs round trip", async () => {
        const repeat = { everyMs: 60_000, untilMs: NOW + 3_600_000, maxOccurrences: 5, firstDueAtMs: NOW };
        await same(async (s) => {
          await s.applyCommands([schedule5("every-minute", { repeat, maxLatenessMs: 1_000 }), schedule5("once")], decide);
          const due = await s.claimDue({ nowMs: NOW, limit: 10, owner: "a", leaseUntilMs: NOW + 30_000 });
          return [await s.get(key("every-minute")), due];
        });
      });

      it("when a firing moves a recurring timer to its next occurrence, then it stays Scheduled, unclaimed, and a stale second record is refused", async () => {
        const repeat = { everyMs: 60_000, untilMs: null, maxOccurrences: null, firstDueAtMs: NOW };
        await same(async (s) => {
          await s.applyCommands([schedule5("every-minute", { repeat })], decide);
          const [due] = await s.claimDue({ nowMs: NOW, limit: 10, owner: "a", leaseUntilMs: NOW + 30_000 });
          const next = firing(due!, {
            state: "Scheduled",
            dueAtMs: NOW + 60_000,
            occurrence: 2,
            reachedAtMs: NOW + 5,
            updatedAtMs: NOW + 5,
          });
          const first = await s.recordFirings([next], "a");
          const again = await s.recordFirings([next], "a");
          const byOther = await s.claimDue({ nowMs: NOW + 60_000, limit: 10, owner: "b", leaseUntilMs: NOW + 90_000 });
          return [first, again, await s.get(due!), byOther];
        });
      });

      it("when a prefix cancel is recorded, then later older schedules under it are ignored and claims carry its timestamp", async () => {
        await same(async (s) => {
          const decisions = await s.applyCommands(
            [
              schedule5("job-1", { timestampMs: 3 }),
              cancelPrefix("job-", 10),
              schedule5("job-2", { timestampMs: 7 }),
              schedule5("other", { timestampMs: 7 }),
            ],
            decide,
          );
          const older = await s.applyCommands(
            [cancelPrefix("job-", 8), schedule5("job-3", { timestampMs: 9 }), schedule5("job-4", { timestampMs: 11 })],
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
        expect(await store.get(key("job-2"))).toBeUndefined();
      });

      it("when a prefix cancel is swept in small steps, then every matching timer is cancelled once and the sweep finishes", async () => {
        await same(async (s) => {
          const ids = ["job-a", "job-b", "job-c", "job-d", "job-e", "jobless", "job-😀", "other"];
          await s.applyCommands(
            ids.map((id) => schedule5(id, { timestampMs: 3 })),
            decide,
          );
          await s.applyCommands([schedule5("job-new", { timestampMs: 20 }), cancelPrefix("job-", 10)], decide);
          const steps: unknown[] = [];
          for (let i = 0; i < 10; i++) {
            const { decisions, done } = await s.sweepPrefixCancel({ tenantId: TENANT, serviceCallIdPrefix: "job-" }, 2, decide.nowMs);
            steps.push([decisions.map((d) => [d.previous?.serviceCallId, d.outcome]), done]);
            if (done) break;
          }
          const states = await Promise.all([...ids, "job-new"].map(async (id) => [id, (await s.get(key(id)))?.state]));
          return [steps, states, await s.unfinishedPrefixCancels(), await s.countScheduled()];
        });
        const state = async (serviceCallId: string) => (await store.get(key(serviceCallId)))?.state;
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

    describe("nextDueAt and countScheduled", () => {
      it("when no timer is Scheduled, then nextDueAt is null and the count is 0", async () => {
        expect(await store.nextDueAt()).toBeNull();
        expect(await store.countScheduled()).toBe(0);
      });

      it("when timers are Reached or Cancelled, then only the Scheduled ones count", async () => {
        await apply(schedule("reached", NOW - 30), schedule("cancelled", NOW - 20));
        await fireDue(NOW - 30);
        await apply(
          cancel("cancelled", { timestampMs: 2 }),
          cancel("tombstone"),
          schedule("later", NOW + 300),
          schedule("soon", NOW + 200),
          schedule("soonest-other-tenant", NOW + 250, { tenantId: "globex" }),
        );

        expect(await store.nextDueAt()).toBe(NOW + 200);
        expect(await store.countScheduled()).toBe(3);
      });

      it("when the earliest timers of other tenants were cancelled or moved later, then nextDueAt is the earliest still Scheduled", async () => {
        await apply(
          schedule("cancelled-first", NOW + 100, { tenantId: "initech" }),
          schedule("moved-later", NOW + 150, { tenantId: "globex" }),
          schedule("kept", NOW + 400),
        );
        expect(await store.nextDueAt()).toBe(NOW + 100);

        await apply(
          cancel("cancelled-first", { tenantId: "initech", timestampMs: 2 }),
          schedule("moved-later", NOW + 300, { tenantId: "globex", timestampMs: 2 }),
        );

        expect(await store.nextDueAt()).toBe(NOW + 300);
        expect(await store.countScheduled()).toBe(2);
        await apply(cancel("moved-later", { tenantId: "globex", timestampMs: 3 }), cancel("kept", { timestampMs: 3 }));
        expect(await store.nextDueAt()).toBeNull();
        expect(await store.countScheduled()).toBe(0);
      });
    });

    describe("stored values", () => {
      it("when get names an unknown key, then it returns undefined", async () => {
        await apply(schedule("known", NOW));

        expect(await store.get(key("unknown"))).toBeUndefined();
        expect(await store.get(key("known", "other-tenant"))).toBeUndefined();
      });

      it("when data is JSON text, then it is kept byte for byte (unicode, nested, 16 KiB)", async () => {
        const unicode = '{"name":"Zoë","emoji":"🎉","escaped":"\\u00e9\\n","nested":{"list":[1,2.50,{"deep":null}]}}';
        const spaced = ' { "spaced" : [ 1 , 2 ] } ';
        const filler = "€".repeat(5000);
        const padding = "x".repeat(16384 - Buffer.byteLength(JSON.stringify({ filler })));
        const large = JSON.stringify({ filler: filler + padding });
        expect(Buffer.byteLength(large)).toBe(16384);
        await apply(
          schedule("unicode", NOW, { data: unicode }),
          schedule("spaced", NOW, { data: spaced }),
          schedule("large", NOW, { data: large }),
        );

        expect((await store.get(key("unicode")))?.data).toBe(unicode);
        expect((await store.get(key("spaced")))?.data).toBe(spaced);
        expect((await store.get(key("large")))?.data).toBe(large);
        expect((await claim(NOW, 10)).map((t) => t.data)).toEqual([large, spaced, unicode]);
      });

      it("when a serviceCallId is 256 code points with emoji, then it round trips through every method", async () => {
        const longId = Array.from({ length: 256 }, (_, i) => ["😀", "é", "字", "a"][i % 4]).join("");
        expect([...longId]).toHaveLength(256);
        await apply(schedule(longId, NOW, { correlationId: "ß".repeat(128) }));

        expect((await store.get(key(longId)))?.serviceCallId).toBe(longId);
        const due = await claim(NOW, 10);
        expect(due.map((t) => t.serviceCallId)).toEqual([longId]);
        expect(await markReached(due, NOW, OWNER)).toEqual([key(longId)]);
        expect(await store.get(key(longId))).toMatchObject({ state: "Reached", correlationId: "ß".repeat(128) });
      });
    });

    describe("lifecycle", () => {
      it("when the store is closed, then further calls fail and closing again is harmless", async () => {
        await store.close();

        await expect(store.get(key("any"))).rejects.toThrow();
        await expect(apply(schedule("any", NOW))).rejects.toThrow();
        await expect(store.close()).resolves.toBeUndefined();
      });
    });
  });
}

/** The cases of a durable store: what survives closing and reopening its storage. */
export function describeDurableTimerStoreContract(name: string, open: () => Promise<DurableTimerStoreHarness>): void {
  describe(`${name} keeps its timers across a reopen`, () => {
    const current = useStore(open);
    let store: TimerStore;
    beforeEach(() => {
      store = current.store;
    });
    const reopen = async (): Promise<void> => {
      await store.close();
      store = current.store = await current.harness.reopen();
    };
    const apply = (...commands: TimerCommand[]) => applyTo(store, ...commands);
    const claim = (nowMs: number, limit: number) => claimOn(store, nowMs, limit);
    const fireDue = async (nowMs: number) => markReachedOn(store, await claim(nowMs, 1000), nowMs, OWNER);
    const cancelPrefix = (serviceCallIdPrefix: string, timestampMs: number): TimerCommand => ({
      kind: "cancelPrefix",
      tenantId: TENANT,
      serviceCallIdPrefix,
      correlationId: null,
      timestampMs,
    });

    it("when a timer carries a trace and the store is reopened, then the trace is kept (CONTRACT §13)", async () => {
      const trace = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", traceFlags: 1, traceState: "k=v,o=1", spanId: "00f067aa0ba902b7" };
      await apply(schedule("traced", NOW + 100, { trace }));
      await reopen();
      expect(await store.get(key("traced"))).toMatchObject({
        traceId: trace.traceId,
        traceFlags: 1,
        traceState: "k=v,o=1",
        traceSpanId: trace.spanId,
      });
    });

    it("when the store is reopened, then every timer is kept", async () => {
      await apply(
        schedule("scheduled", NOW + 100, { data: '{"k":"v"}', correlationId: "req" }),
        schedule("reached", NOW - 100),
        schedule("cancelled", NOW + 100),
        cancel("tombstone"),
      );
      await fireDue(NOW);
      await apply(cancel("cancelled", { timestampMs: 2 }));
      const keys = ["scheduled", "reached", "cancelled", "tombstone"].map((id) => key(id));
      const before = await Promise.all(keys.map((k) => store.get(k)));
      expect(before.map((t) => t?.state)).toEqual(["Scheduled", "Reached", "Cancelled", "Cancelled"]);

      await reopen();

      expect(await Promise.all(keys.map((k) => store.get(k)))).toEqual(before);
      expect(await store.nextDueAt()).toBe(NOW + 100);
      expect(await store.countScheduled()).toBe(1);
      expect((await claim(NOW + 100, 10)).map(keyOf)).toEqual([key("scheduled")]);
    });

    it("when a rule, occurrence and lateness are stored, then they survive a reopen", async () => {
      await storeRecurring(store);
      await reopen();
      await expectRecurring(store);
    });

    it("when a Failed tracked timer is retried, then it survives a reopen with its tracking cleared", async () => {
      await failAndRetry(store);
      await reopen();
      await expectRetriedUntracked(store);
    });

    it("when Fired timers wait for their deadlines, then the deadlines survive a reopen", async () => {
      await fireTracked(store, { a: NOW + 2_000, b: NOW + 1_000 });
      await reopen();
      expect(await store.nextDeadlineAt()).toBe(NOW + 1_000);
      expect((await claimDeadlinesOn(store, NOW + 2_000, 10)).map((t) => t.serviceCallId)).toEqual(["b", "a"]);
    });

    it("when the store is reopened mid-sweep, then the sweep resumes after its progress", async () => {
      await apply(...["k:1", "k:2", "k:3", "k:4", "k:5"].map((id) => schedule(id, NOW + 1_000)));
      await apply(cancelPrefix("k:", 5));
      const first = await store.sweepPrefixCancel({ tenantId: TENANT, serviceCallIdPrefix: "k:" }, 2, NOW);
      expect(first.decisions.map((d) => d.next?.serviceCallId)).toEqual(["k:1", "k:2"]);

      await reopen();

      expect(await store.unfinishedPrefixCancels()).toEqual([
        { tenantId: TENANT, serviceCallIdPrefix: "k:", commandTs: 5, progressKey: "k:2" },
      ]);
      const second = await store.sweepPrefixCancel({ tenantId: TENANT, serviceCallIdPrefix: "k:" }, 2, NOW);
      expect(second.decisions.map((d) => d.next?.serviceCallId)).toEqual(["k:3", "k:4"]);
      expect((await claim(NOW + 1_000, 10)).map((t) => [t.serviceCallId, t.prefixCancelTs])).toEqual([["k:5", 5]]);
    });
  });
}

/**
 * The cases of a store several instances share: one owner's live claims on due timers and on
 * passed deadlines keep them from another owner until the lease ends.
 */
export function describeSharedTimerStoreContract(name: string, open: () => Promise<TimerStoreHarness>): void {
  describe(`${name} keeps one owner's claims from another`, () => {
    const OTHER = "instance-b";
    const current = useStore(open);
    let store: TimerStore;
    beforeEach(() => {
      store = current.store;
    });
    const apply = (...commands: TimerCommand[]) => applyTo(store, ...commands);
    const claim = (nowMs: number, limit: number, after?: DueCursor, owner = OWNER) => claimOn(store, nowMs, limit, after, owner);
    const markReached = (timers: readonly DueTimer[], reachedAtMs: number, owner: string) =>
      markReachedOn(store, timers, reachedAtMs, owner);

    it("when one owner has claimed due timers, then another owner's claim does not get them", async () => {
      await apply(schedule("a", NOW - 2), schedule("b", NOW - 1), schedule("c", NOW));
      const first = await claim(NOW, 2);

      const second = await claim(NOW, 10, undefined, OTHER);

      expect(first.map((t) => t.serviceCallId)).toEqual(["a", "b"]);
      expect(second.map((t) => t.serviceCallId)).toEqual(["c"]);
    });

    it("when a claim has expired, then another owner takes it over and the first owner's mark is refused", async () => {
      await apply(schedule("a", NOW));
      const stale = await claim(NOW, 10);

      const takenOver = await claim(NOW + CLAIM_TTL_MS + 1, 10, undefined, OTHER);

      expect(takenOver.map((t) => t.serviceCallId)).toEqual(["a"]);
      expect(await markReached(stale, NOW + CLAIM_TTL_MS + 2, OWNER)).toEqual([]);
      expect(await markReached(takenOver, NOW + CLAIM_TTL_MS + 2, OTHER)).toEqual([key("a")]);
    });

    it("when an owner releases its claims, then another owner can claim the timers at once", async () => {
      await apply(schedule("a", NOW), schedule("b", NOW));
      await claim(NOW, 10);

      await store.releaseClaims(OWNER, [key("a")]);
      expect((await claim(NOW, 10, undefined, OTHER)).map((t) => t.serviceCallId)).toEqual(["a"]);
      await store.releaseClaims(OWNER);
      expect((await claim(NOW, 10, undefined, OTHER)).map((t) => t.serviceCallId)).toEqual(["a", "b"]);
    });

    it("when one owner has claimed passed deadlines, then another owner gets them only after the lease, and the first owner's record is then refused", async () => {
      await fireTracked(store, { a: NOW + 1_000, b: NOW + 1_000 });
      const [first] = await claimDeadlinesOn(store, NOW + 1_000, 1);

      expect((await claimDeadlinesOn(store, NOW + 1_000, 10, OTHER)).map((t) => t.serviceCallId)).toEqual(["b"]);
      expect(await store.recordDeadlines([deadlineRecord(first!, {})], OTHER)).toEqual([]);
      const later = NOW + 1_000 + CLAIM_TTL_MS + 1;
      const takenOver = await claimDeadlinesOn(store, later, 10, OTHER);
      expect(takenOver.map((t) => t.serviceCallId)).toEqual(["a", "b"]);
      expect(await store.recordDeadlines([deadlineRecord(first!, {})], OWNER)).toEqual([]);
      expect(await store.recordDeadlines([deadlineRecord(takenOver[0]!, {})], OTHER)).toEqual([key("a")]);
    });
  });
}
