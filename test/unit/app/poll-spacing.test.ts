import { describe, expect, it } from "vitest";
import { PollSpacing } from "../../../src/app/firing/poll-spacing.js";

const options = { minSpacingMs: 10, sustainedPerSecond: 200 };

describe("PollSpacing", () => {
  it("leaves the sleep alone while timers fire below the sustained rate", () => {
    const spacing = new PollSpacing(options);
    // 50 timers/s, one per poll, 20 ms apart: a quiet service keeps its precise wake-ups.
    for (let t = 0; t <= 2_000; t += 20) spacing.recordPoll(t, 1);
    expect(spacing.ratePerSecond(2_000)).toBeLessThan(200);
    expect(spacing.delayMs(1, 2_001)).toBe(1);
    expect(spacing.delayMs(0, 2_000)).toBe(0);
  });

  it("spaces polls minSpacingMs apart under a sustained rate", () => {
    const spacing = new PollSpacing(options);
    // 1,000 timers/s, found one per millisecond.
    for (let t = 0; t <= 2_000; t += 1) spacing.recordPoll(t, 1);
    expect(spacing.ratePerSecond(2_000)).toBeGreaterThan(800);
    // Due in 1 ms, but the last poll started at 2,000: not before 2,010.
    expect(spacing.delayMs(1, 2_002)).toBe(8);
    // A longer sleep is never shortened.
    expect(spacing.delayMs(500, 2_002)).toBe(500);
  });

  it("returns to precise wake-ups when the rate falls away", () => {
    const spacing = new PollSpacing(options);
    for (let t = 0; t <= 2_000; t += 1) spacing.recordPoll(t, 1);
    // Five seconds later the decayed rate is far below the threshold.
    expect(spacing.ratePerSecond(7_000)).toBeLessThan(10);
    spacing.recordPoll(7_000, 1);
    expect(spacing.delayMs(1, 7_001)).toBe(1);
  });

  it("counts the timers a poll found, not the polls", () => {
    const spacing = new PollSpacing(options);
    // A burst drained in few polls is a high rate: 400 timers found every 100 ms.
    for (let t = 0; t <= 2_000; t += 100) spacing.recordPoll(t, 400);
    expect(spacing.ratePerSecond(2_000)).toBeGreaterThan(2_000);
  });

  it("never stretches a sleep by more than the spacing, even after the wall clock stepped back", () => {
    const spacing = new PollSpacing(options);
    for (let t = 0; t <= 2_000; t += 1) spacing.recordPoll(t, 1);
    // The clock steps back one hour: the last poll now lies an hour "ahead".
    expect(spacing.delayMs(0, 2_000 - 3_600_000)).toBe(10);
  });
});
