import type { Clock } from "../../../src/app/clock.js";

/** 2025-11-25T22:00:00.000Z: a fixed, readable "now" for tests. */
export const T0 = Date.UTC(2025, 10, 25, 22, 0, 0, 0);

/** A clock that moves only when a test moves it. */
export class FakeClock implements Clock {
  constructor(private nowMs: number = T0) {}

  now(): number {
    return this.nowMs;
  }

  set(epochMs: number): void {
    this.nowMs = epochMs;
  }

  advance(ms: number): void {
    this.nowMs += ms;
  }
}

/** A clock that reads the (possibly faked) `Date.now()`, so it follows `vi.useFakeTimers()`. */
export const dateClock: Clock = { now: () => Date.now() };
