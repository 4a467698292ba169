import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { TimerQueries, TimerRecord } from "../../src/app/queries/timer-queries.js";
import type { TimerRetention } from "../../src/app/retention/timer-retention.js";
import { sweepRetention } from "../../src/app/retention/retention-sweep.js";
import { FakeClock } from "../support/fakes/fake-clock.js";
import { NOW, record } from "./timer-queries.contract.js";

export interface TimerRetentionHarness {
  readonly retention: TimerRetention;
  readonly queries: TimerQueries;
  readonly seed: (records: readonly TimerRecord[]) => Promise<void>;
  readonly cleanup: () => Promise<void>;
}

/** Retention over a store that keeps prefix cancels (SQLite, Postgres; the memory store keeps none). */
export interface PrefixCancelRetentionHarness extends TimerRetentionHarness {
  /** Stores a finished prefix cancel changed at `updatedAtMs`. */
  readonly seedPrefixCancel: (tenantId: string, prefix: string, updatedAtMs: number) => Promise<void>;
  /** The prefixes of the kept prefix cancels, in order. */
  readonly prefixCancels: () => Promise<string[]>;
}

const HOUR = 3_600_000;

/** Every adapter of `TimerRetention` must pass this suite. */
export function describeTimerRetentionContract(name: string, open: () => Promise<TimerRetentionHarness>): void {
  describe(`${name} satisfies the TimerRetention contract`, () => {
    let harness: TimerRetentionHarness;

    beforeEach(async () => {
      harness = await open();
    });
    afterEach(async () => {
      await harness.cleanup();
    });

    const exists = async (serviceCallId: string) => (await harness.queries.get({ tenantId: "acme", serviceCallId })) !== undefined;

    it("when final timers changed before the cutoff, then they go; newer ones and unfinished ones stay", async () => {
      const cutoff = NOW - HOUR;
      const finalStates = ["Reached", "Cancelled", "Missed", "Completed", "Failed", "TimedOut"] as const;
      await harness.seed([
        ...finalStates.map((state) => record(`old-${state}`, NOW - 2 * HOUR, { state, updatedAtMs: cutoff - 1 })),
        ...finalStates.map((state) => record(`new-${state}`, NOW - 2 * HOUR, { state, updatedAtMs: cutoff })),
        record("old-tombstone", 0, { state: "Cancelled", dueAtMs: null, updatedAtMs: cutoff - 5 }),
        record("old-scheduled", NOW - 2 * HOUR, { updatedAtMs: cutoff - HOUR }),
        record("old-fired", NOW - 2 * HOUR, { state: "Fired", updatedAtMs: cutoff - HOUR }),
      ]);
      let deleted = 0;
      for (let n; (n = await harness.retention.deleteFinalTimers(cutoff, 2)) > 0;) {
        expect(n).toBeLessThanOrEqual(2);
        deleted += n;
      }
      expect(deleted).toBe(finalStates.length + 1);
      for (const state of finalStates) {
        expect(await exists(`old-${state}`)).toBe(false);
        expect(await exists(`new-${state}`)).toBe(true);
      }
      expect(await exists("old-tombstone")).toBe(false);
      expect(await exists("old-scheduled")).toBe(true);
      expect(await exists("old-fired")).toBe(true);
    });

    it("when a batch is smaller than the backlog, then the oldest changes go first", async () => {
      await harness.seed(
        [3, 1, 2].map((age) => record(`age-${age}`, NOW - 10 * HOUR, { state: "Reached", updatedAtMs: NOW - age * HOUR })),
      );
      expect(await harness.retention.deleteFinalTimers(NOW, 2)).toBe(2);
      expect([await exists("age-3"), await exists("age-2"), await exists("age-1")]).toEqual([false, false, true]);
    });

    it("when a sweep runs, then it deletes in batches until no old row is left and counts what it deleted", async () => {
      await harness.seed(
        Array.from({ length: 25 }, (_, i) => record(`sweep-${i}`, NOW - 10 * HOUR, { state: "Reached", updatedAtMs: NOW - 3 * HOUR })),
      );
      await harness.seed([record("recent", NOW - 10 * HOUR, { state: "Reached", updatedAtMs: NOW - HOUR / 2 })]);
      const counted: number[] = [];
      const report = await sweepRetention({
        retention: harness.retention,
        clock: new FakeClock(NOW),
        metrics: { timersDeleted: (n) => counted.push(n) },
        retentionMs: HOUR,
        batchSize: 10,
      });
      expect(report).toEqual({ timersDeleted: 25, prefixCancelsDeleted: 0, more: false });
      expect(counted).toEqual([10, 10, 5]);
      expect(await exists("recent")).toBe(true);
    });
  });
}

/** The retention cases of a store that keeps prefix cancels (SQLite and Postgres call it). */
export function describePrefixCancelRetentionContract(name: string, open: () => Promise<PrefixCancelRetentionHarness>): void {
  describe(`${name} deletes old prefix cancels`, () => {
    let harness: PrefixCancelRetentionHarness;

    beforeEach(async () => {
      harness = await open();
    });
    afterEach(async () => {
      await harness.cleanup();
    });

    it("when prefix cancels are kept, then those changed before the cutoff go", async () => {
      await harness.seedPrefixCancel("acme", "old-", NOW - 2 * HOUR);
      await harness.seedPrefixCancel("acme", "new-", NOW);
      expect(await harness.retention.deletePrefixCancels(NOW - HOUR, 10)).toBe(1);
      expect(await harness.prefixCancels()).toEqual(["new-"]);
    });
  });
}
