import { describe, expect, it } from "vitest";
import { StatsCache } from "../../../src/app/queries/stats-cache.js";
import type { TimerCounts } from "../../../src/app/queries/timer-queries.js";
import { FakeClock } from "../../support/fakes/fake-clock.js";

function counts(scheduled: number): TimerCounts {
  const byState = { Scheduled: scheduled, Reached: 0, Cancelled: 0, Missed: 0, Fired: 0, Completed: 0, Failed: 0, TimedOut: 0 };
  return { byState, nextDueAtMs: null, avgDurationMs: null };
}

describe("StatsCache", () => {
  it("when stats are asked again within the max age, then the store counts once", async () => {
    const clock = new FakeClock();
    const cache = new StatsCache(clock, 250);
    let calls = 0;
    const count = async () => counts(++calls);

    const answers = await Promise.all([cache.get("acme", count), cache.get("acme", count)]);
    clock.advance(250);
    const later = await cache.get("acme", count);

    expect(calls).toBe(1);
    expect(answers.map((a) => a.byState.Scheduled)).toEqual([1, 1]);
    expect(later.byState.Scheduled).toBe(1);
  });

  it("when the answer is older than the max age, then the store counts again", async () => {
    const clock = new FakeClock();
    const cache = new StatsCache(clock, 250);
    let calls = 0;
    const count = async () => counts(++calls);
    await cache.get("acme", count);

    clock.advance(251);

    expect((await cache.get("acme", count)).byState.Scheduled).toBe(2);
  });

  it("when tenants differ, then each has its own count", async () => {
    const cache = new StatsCache(new FakeClock(), 250);

    const [a, b] = await Promise.all([cache.get("acme", async () => counts(1)), cache.get("globex", async () => counts(2))]);

    expect([a.byState.Scheduled, b.byState.Scheduled]).toEqual([1, 2]);
  });

  it("when a count fails, then the failure is not shared with the next request", async () => {
    const cache = new StatsCache(new FakeClock(), 250);
    await expect(cache.get("acme", () => Promise.reject(new Error("busy")))).rejects.toThrow("busy");

    expect((await cache.get("acme", async () => counts(7))).byState.Scheduled).toBe(7);
  });

  it("when more tenants than the cap are cached, then the oldest is forgotten", async () => {
    const cache = new StatsCache(new FakeClock(), 250, 2);
    let calls = 0;
    const count = async () => counts(++calls);
    await cache.get("a", count);
    await cache.get("b", count);
    await cache.get("c", count);

    await cache.get("a", count);

    expect(calls).toBe(4);
  });
});
