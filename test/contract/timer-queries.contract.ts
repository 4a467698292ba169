import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LIST_SCAN_BUDGET } from "../../src/app/queries/keyset-list.js";
import {
  TIMER_STATES,
  type ChangedPosition,
  type ListPosition,
  type TimerListQuery,
  type TimerQueries,
  type TimerRecord,
} from "../../src/app/queries/timer-queries.js";

/** An adapter of `TimerQueries` over a store whose rows the test writes directly. */
export interface TimerQueriesHarness {
  readonly queries: TimerQueries;
  /** Inserts or replaces rows as they are (any state, any column). */
  readonly seed: (records: readonly TimerRecord[]) => Promise<void>;
  readonly cleanup: () => Promise<void>;
}

export const NOW = 1_764_108_000_000;
const TENANT = "acme";

/** A Scheduled timer last changed before NOW; `fields` override. */
export function record(serviceCallId: string, dueAtMs: number, fields: Partial<TimerRecord> = {}): TimerRecord {
  return {
    tenantId: TENANT,
    serviceCallId,
    state: "Scheduled",
    dueAtMs,
    data: null,
    correlationId: null,
    commandTs: 1,
    generation: 1,
    registeredAtMs: NOW - 60_000,
    reachedAtMs: null,
    updatedAtMs: NOW - 60_000,
    repeat: null,
    occurrence: 1,
    attempt: 0,
    firedAtMs: null,
    completedAtMs: null,
    result: null,
    lastReason: null,
    createdBy: null,
    createdVia: null,
    traceId: null,
    ...fields,
  };
}

const ids = (records: readonly { serviceCallId: string }[]) => records.map((r) => r.serviceCallId);

/** Every adapter of `TimerQueries` must pass this suite. */
export function describeTimerQueriesContract(name: string, open: () => Promise<TimerQueriesHarness>): void {
  describe(`${name} satisfies the TimerQueries contract`, () => {
    let harness: TimerQueriesHarness;
    let queries: TimerQueries;

    beforeEach(async () => {
      harness = await open();
      queries = harness.queries;
    });
    afterEach(async () => {
      await harness.cleanup();
    });

    const list = (query: Partial<TimerListQuery> = {}) => queries.list({ tenantId: TENANT, limit: 100, nowMs: NOW, ...query });

    /** Every page from the first, following `next`. */
    async function listAll(query: Partial<TimerListQuery>): Promise<{ records: TimerRecord[]; pages: number }> {
      const records: TimerRecord[] = [];
      let after: ListPosition | undefined;
      let pages = 0;
      for (;;) {
        const page = await list({ ...query, ...(after === undefined ? {} : { after }) });
        records.push(...page.timers);
        pages++;
        if (page.next === null) return { records, pages };
        after = page.next;
      }
    }

    it("when a timer is stored, then get returns every column; an unknown key or another tenant's is undefined", async () => {
      const stored = record("call-1", NOW + 5_000, { data: '{"a":1}', correlationId: "c-1", commandTs: 42, generation: 3 });
      await harness.seed([stored]);
      expect(await queries.get({ tenantId: TENANT, serviceCallId: "call-1" })).toEqual(stored);
      expect(await queries.get({ tenantId: TENANT, serviceCallId: "call-2" })).toBeUndefined();
      expect(await queries.get({ tenantId: "globex", serviceCallId: "call-1" })).toBeUndefined();
    });

    it("when a key was only cancelled (a tombstone), then get shows it Cancelled without dueAt, and list leaves it out", async () => {
      await harness.seed([record("tomb", 0, { state: "Cancelled", dueAtMs: null })]);
      expect(await queries.get({ tenantId: TENANT, serviceCallId: "tomb" })).toMatchObject({ state: "Cancelled", dueAtMs: null });
      expect((await list()).timers).toEqual([]);
    });

    it("when timers are in every state, then get and list with each state filter find each one", async () => {
      const states = TIMER_STATES;
      await harness.seed(
        states.map((state, i) => record(`in-${state}`, NOW + i, { state, ...(state === "Scheduled" ? {} : { reachedAtMs: NOW }) })),
      );
      for (const state of states) {
        expect((await queries.get({ tenantId: TENANT, serviceCallId: `in-${state}` }))?.state).toBe(state);
        expect(ids((await list({ state })).timers)).toEqual([`in-${state}`]);
      }
      expect(ids((await list()).timers)).toEqual(states.map((s) => `in-${s}`));
    });

    it("when the tracking, series and audit columns are set, then get returns them", async () => {
      const tracked = record("tracked", NOW - 10_000, {
        state: "Completed",
        repeat: null,
        attempt: 2,
        firedAtMs: NOW - 9_000,
        completedAtMs: NOW - 8_000,
        result: "ok",
        lastReason: "timeout",
        createdBy: "alice",
        createdVia: "cli",
      });
      const recurring = record("recurring", NOW + 1_000, {
        repeat: '{"everyMs":60000,"firstDueAt":"2025-11-25T22:00:00.000Z"}',
        occurrence: 4,
      });
      await harness.seed([tracked, recurring]);
      expect(await queries.get({ tenantId: TENANT, serviceCallId: "tracked" })).toEqual(tracked);
      expect(await queries.get({ tenantId: TENANT, serviceCallId: "recurring" })).toEqual(recurring);
    });

    it("when listing, then timers come by (dueAt, serviceCallId) with code point order among equal due times, one tenant only", async () => {
      await harness.seed([
        record("b", NOW + 2),
        record("a", NOW + 2),
        record("\u{1F600}", NOW + 2),
        record("\uFFFD", NOW + 2),
        record("z", NOW + 1),
        record("other", NOW, { tenantId: "globex" }),
      ]);
      expect(ids((await list()).timers)).toEqual(["z", "a", "b", "\uFFFD", "\u{1F600}"]);
    });

    it("when dueAfter and dueBefore are given, then dueAfter is inclusive and dueBefore exclusive", async () => {
      await harness.seed([record("t0", NOW), record("t1", NOW + 1), record("t2", NOW + 2), record("t3", NOW + 3)]);
      expect(ids((await list({ dueAfterMs: NOW + 1, dueBeforeMs: NOW + 3 })).timers)).toEqual(["t1", "t2"]);
    });

    it("when a serviceCallId prefix is given, then only matching timers are listed", async () => {
      await harness.seed([record("order-1", NOW + 3), record("invoice-1", NOW + 2), record("order-2", NOW + 1), record("orde", NOW)]);
      expect(ids((await list({ serviceCallIdPrefix: "order-" })).timers)).toEqual(["order-2", "order-1"]);
    });

    it("when a rare prefix lies beyond the scan budget, then pages come back short with a cursor and paging finds every match", async () => {
      const filler = Array.from({ length: LIST_SCAN_BUDGET + 500 }, (_, i) => record(`filler-${i}`, NOW + i));
      await harness.seed([...filler, record("rare-1", NOW + 10), record("rare-2", NOW + LIST_SCAN_BUDGET + 400)]);
      const first = await list({ serviceCallIdPrefix: "rare-", limit: 10 });
      expect(ids(first.timers)).toEqual(["rare-1"]);
      expect(first.next).not.toBeNull();
      const all = await listAll({ serviceCallIdPrefix: "rare-", limit: 10 });
      expect(ids(all.records)).toEqual(["rare-1", "rare-2"]);
    });

    it("when paging through 2,500 timers while timers change between pages, then no timer is listed twice and no unchanged one is missed", async () => {
      // Many share a due time, so the serviceCallId tie-break is exercised at page boundaries.
      const timers = Array.from({ length: 2_500 }, (_, i) => record(`t-${String(i).padStart(4, "0")}`, NOW + Math.floor(i / 7) * 1_000));
      await harness.seed(timers);
      const changed = new Set<string>();
      const listed: TimerRecord[] = [];
      let after: ListPosition | undefined;
      let page = 0;
      for (;;) {
        const result = await list({ state: "Scheduled", limit: 100, ...(after === undefined ? {} : { after }) });
        listed.push(...result.timers);
        if (result.next === null) break;
        after = result.next;
        page++;
        const changedAt = NOW + page;
        // Between pages: one listed timer moves to the end, one not yet listed moves to the front,
        // one not yet listed is cancelled, one fires, and a new timer appears behind the cursor.
        const seen = timers[page * 100 - 50]!;
        const ahead = timers[page * 100 + 50];
        const ahead2 = timers[page * 100 + 60];
        const ahead3 = timers[page * 100 + 70];
        const updates = [
          { ...seen, dueAtMs: NOW + 10_000_000, updatedAtMs: changedAt, generation: 2 },
          record(`new-${page}`, NOW + 9_000_000, { updatedAtMs: changedAt }),
        ];
        if (ahead !== undefined) updates.push({ ...ahead, dueAtMs: NOW - 1, updatedAtMs: changedAt, generation: 2 });
        if (ahead2 !== undefined) updates.push({ ...ahead2, state: "Cancelled", updatedAtMs: changedAt });
        if (ahead3 !== undefined) updates.push({ ...ahead3, state: "Reached", reachedAtMs: changedAt, updatedAtMs: changedAt });
        for (const u of updates) changed.add(u.serviceCallId);
        await harness.seed(updates);
      }
      const listedIds = ids(listed);
      expect(new Set(listedIds).size).toBe(listedIds.length);
      const unchanged = ids(timers).filter((id) => !changed.has(id));
      expect(listedIds.filter((id) => !changed.has(id))).toEqual(unchanged);
      expect(page).toBeGreaterThanOrEqual(20);
    });

    it("when limit is 1000 and more timers exist, then a page holds 1000 and the next one the rest", async () => {
      await harness.seed(Array.from({ length: 1_001 }, (_, i) => record(`x-${i}`, NOW + i)));
      const first = await list({ limit: 1_000 });
      expect(first.timers).toHaveLength(1_000);
      const second = await list({ limit: 1_000, after: first.next! });
      expect(ids(second.timers)).toEqual(["x-1000"]);
      expect(second.next).toBeNull();
    });

    describe("createdBy, changedSince and order changedDesc (CONTRACT §14)", () => {
      const changed = (query: Partial<TimerListQuery> = {}) => queries.listChanged({ tenantId: TENANT, limit: 100, nowMs: NOW, ...query });

      async function changedAll(query: Partial<TimerListQuery>): Promise<TimerRecord[]> {
        const records: TimerRecord[] = [];
        let afterChanged: ChangedPosition | undefined;
        for (let pages = 0; pages < 1_000; pages++) {
          const page = await changed({ ...query, ...(afterChanged === undefined ? {} : { afterChanged }) });
          records.push(...page.timers);
          if (page.next === null) return records;
          afterChanged = page.next;
        }
        throw new Error("paging did not end");
      }

      it("when createdBy or changedSince filter a due-order list, then only matching timers come, still by due time", async () => {
        await harness.seed([
          record("a", NOW + 3, { createdBy: "alice", updatedAtMs: NOW - 10 }),
          record("b", NOW + 1, { createdBy: "bob", updatedAtMs: NOW - 5 }),
          record("c", NOW + 2, { createdBy: "alice", updatedAtMs: NOW - 1 }),
          record("d", NOW + 4, { updatedAtMs: NOW - 1 }),
        ]);

        expect(ids((await list({ createdBy: "alice" })).timers)).toEqual(["c", "a"]);
        expect(ids((await list({ changedSinceMs: NOW - 5 })).timers)).toEqual(["b", "c", "d"]);
        expect(ids((await list({ createdBy: "alice", changedSinceMs: NOW - 5 })).timers)).toEqual(["c"]);
      });

      it("when listing most recently changed first, then timers come by updatedAt descending, ties by serviceCallId descending", async () => {
        await harness.seed([
          record("old", NOW + 1, { updatedAtMs: NOW - 30 }),
          record("new", NOW + 2, { updatedAtMs: NOW - 1 }),
          record("tie-a", NOW + 3, { updatedAtMs: NOW - 10 }),
          record("tie-b", NOW + 4, { updatedAtMs: NOW - 10 }),
          record("future", NOW + 5, { updatedAtMs: NOW + 1 }),
          record("other", NOW + 6, { tenantId: "globex", updatedAtMs: NOW - 1 }),
        ]);

        expect(ids((await changed()).timers)).toEqual(["new", "tie-b", "tie-a", "old"]);
        expect(ids((await changed({ changedSinceMs: NOW - 10 })).timers)).toEqual(["new", "tie-b", "tie-a"]);
      });

      it("when listing changedDesc with a state, createdBy, prefix or due range, then each filter applies", async () => {
        await harness.seed([
          record("f1", NOW - 100, { state: "Failed", createdBy: "alice", updatedAtMs: NOW - 3 }),
          record("f2", NOW - 200, { state: "Failed", createdBy: "bob", updatedAtMs: NOW - 2 }),
          record("s1", NOW + 100, { createdBy: "alice", updatedAtMs: NOW - 1 }),
          record("x-f3", NOW - 300, { state: "Failed", updatedAtMs: NOW - 4 }),
        ]);

        expect(ids((await changed({ state: "Failed" })).timers)).toEqual(["f2", "f1", "x-f3"]);
        expect(ids((await changed({ createdBy: "alice" })).timers)).toEqual(["s1", "f1"]);
        expect(ids((await changed({ createdBy: "alice", state: "Failed" })).timers)).toEqual(["f1"]);
        expect(ids((await changed({ serviceCallIdPrefix: "x-" })).timers)).toEqual(["x-f3"]);
        expect(ids((await changed({ dueBeforeMs: NOW - 150 })).timers)).toEqual(["f2", "x-f3"]);
      });

      it("when paging changedDesc through 1,200 timers while some change, then none is listed twice and every unchanged one once", async () => {
        const all = Array.from({ length: 1_200 }, (_, i) =>
          record(`t${String(i).padStart(4, "0")}`, NOW + i, { updatedAtMs: NOW - 5_000 + (i % 300) }),
        );
        await harness.seed(all);
        const seen: TimerRecord[] = [];
        let afterChanged: ChangedPosition | undefined;
        let pages = 0;
        for (;;) {
          const page = await changed({ limit: 250, ...(afterChanged === undefined ? {} : { afterChanged }) });
          seen.push(...page.timers);
          if (pages++ === 1)
            await harness.seed([
              { ...all[0]!, updatedAtMs: NOW + 10 },
              { ...all[1_199]!, updatedAtMs: NOW + 10 },
            ]);
          if (page.next === null) break;
          afterChanged = page.next;
        }

        const listed = ids(seen);
        expect(new Set(listed).size).toBe(listed.length);
        const changedIds = new Set(["t0000", "t1199"]);
        expect(listed.filter((id) => !changedIds.has(id)).sort()).toEqual(
          ids(all)
            .filter((id) => !changedIds.has(id))
            .sort(),
        );
        for (let i = 1; i < seen.length; i++) expect(seen[i - 1]!.updatedAtMs).toBeGreaterThanOrEqual(seen[i]!.updatedAtMs);
        expect((await changedAll({})).length).toBe(1_198);
      });
    });

    it("when the due histogram is asked, then Scheduled timers count as overdue or in their hour, and each part stops at the cap", async () => {
      const HOUR = 3_600_000;
      await harness.seed([
        record("o1", NOW - 5),
        record("o2", NOW - HOUR * 30),
        record("h0a", NOW),
        record("h0b", NOW + HOUR - 1),
        record("h2", NOW + HOUR * 2 + 5),
        record("h23", NOW + HOUR * 23 + 1),
        record("later", NOW + HOUR * 24),
        record("reached", NOW + 10, { state: "Reached" }),
        record("elsewhere", NOW + 10, { tenantId: "globex" }),
      ]);
      const query = { tenantId: TENANT, fromMs: NOW, bucketMs: HOUR, buckets: 24 };

      const full = await queries.dueHistogram({ ...query, cap: 1_000 });
      expect(full).toMatchObject({ overdue: 2, overdueCapped: false, capped: false });
      expect(full.counts).toEqual(Array.from({ length: 24 }, (_, i) => ({ 0: 2, 2: 1, 23: 1 })[i] ?? 0));

      const capped = await queries.dueHistogram({ ...query, cap: 2 });
      expect(capped).toMatchObject({ overdue: 2, overdueCapped: false, capped: true });
      expect(capped.counts.reduce((a, b) => a + b, 0)).toBe(2);
      expect((await queries.dueHistogram({ ...query, cap: 1 })).overdueCapped).toBe(true);
    });

    it("when stats are asked, then they count the tenant's timers by state and give its next due time", async () => {
      await harness.seed([
        record("s1", NOW + 5_000),
        record("s2", NOW - 5_000),
        record("r1", NOW - 9_000, { state: "Reached", reachedAtMs: NOW - 8_000 }),
        record("c1", NOW, { state: "Cancelled" }),
        record("tomb", 0, { state: "Cancelled", dueAtMs: null }),
        record("g1", NOW - 50_000, { tenantId: "globex" }),
        record("done-1", NOW - 9_000, { state: "Completed", firedAtMs: NOW - 9_000, completedAtMs: NOW - 8_000 }),
        record("done-2", NOW - 9_000, { state: "Completed", firedAtMs: NOW - 9_000, completedAtMs: NOW - 6_000 }),
        record("f1", NOW - 9_000, { state: "Fired", firedAtMs: NOW - 9_000 }),
      ]);
      const stats = await queries.stats(TENANT);
      expect(stats.byState).toMatchObject({ Scheduled: 2, Reached: 1, Cancelled: 2 });
      expect(stats.nextDueAtMs).toBe(NOW - 5_000);
      expect(stats.byState).toMatchObject({ Completed: 2, Fired: 1, Missed: 0, Failed: 0, TimedOut: 0 });
      expect(stats.avgDurationMs).toBe(2_000);
      const empty = await queries.stats("nobody");
      expect(Object.values(empty.byState).every((n) => n === 0)).toBe(true);
      expect(empty).toMatchObject({ nextDueAtMs: null, avgDurationMs: null });
    });

    it("when timers of several tenants are stored, then tenants lists each once in code point order", async () => {
      await harness.seed([
        record("a", NOW, { tenantId: "globex" }),
        record("b", NOW, { tenantId: "acme" }),
        record("c", NOW, { tenantId: "acme" }),
        record("d", NOW, { tenantId: "Zeta" }),
      ]);
      expect(await queries.tenants(10)).toEqual(["Zeta", "acme", "globex"]);
      expect(await queries.tenants(2)).toEqual(["Zeta", "acme"]);
    });
  });
}
