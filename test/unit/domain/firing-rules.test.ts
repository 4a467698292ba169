/** The firing rule (CONTRACT §3.1, §10, §11), pure: a fake calendar, no clock, no store. */
import { describe, expect, it } from "vitest";
import { decideFiring, type FiringTimer } from "../../../src/domain/firing-rules.js";
import type { RecurrenceCalendar } from "../../../src/domain/recurrence.js";

const HOUR_MS = 3_600_000;
const T0 = Date.parse("2026-11-28T12:00:00Z");

/** Cron "every hour on the hour" in UTC, computed by arithmetic. */
const hourly: RecurrenceCalendar = {
  nextCronTime: (_cron, _zone, afterMs) => (Math.floor(afterMs / HOUR_MS) + 1) * HOUR_MS,
  problem: () => undefined,
};

function oneShot(fields: Partial<FiringTimer> = {}): FiringTimer {
  return {
    tenantId: "acme",
    serviceCallId: "call",
    dueAtMs: T0 - 1_000,
    generation: 3,
    occurrence: 1,
    repeat: null,
    maxLatenessMs: null,
    commandTs: 10,
    reachedAtMs: null,
    ...fields,
  };
}

describe("decideFiring", () => {
  it("when a one-shot timer is due, then it is reached at now with its lateness and ends Reached", () => {
    expect(decideFiring(oneShot(), T0, hourly, null)).toMatchObject({
      kind: "reached",
      dueAtMs: T0 - 1_000,
      occurrence: null,
      missedOccurrences: 0,
      lateMs: 1_000,
      next: { state: "Reached", reachedAtMs: T0, commandTs: 10, updatedAtMs: T0 },
    });
  });

  it("when a timer is later than maxLatenessMs, then it is missed and ends Missed; at the limit it is still reached", () => {
    expect(decideFiring(oneShot({ maxLatenessMs: 999 }), T0, hourly, null)).toMatchObject({ kind: "missed", next: { state: "Missed" } });
    expect(decideFiring(oneShot({ maxLatenessMs: 1_000 }), T0, hourly, null)).toMatchObject({ kind: "reached" });
  });

  it("when a prefix cancel at or after the timer's last command covers it, then nothing is published and it ends Cancelled at the prefix cancel's time", () => {
    expect(decideFiring(oneShot(), T0, hourly, 10)).toMatchObject({ kind: "cancelled", next: { state: "Cancelled", commandTs: 10 } });
    expect(decideFiring(oneShot(), T0, hourly, 9)).toMatchObject({ kind: "reached" });
  });

  it("when a tracked timer is reached, then it becomes Fired with its first attempt and completion deadline", () => {
    const decision = decideFiring(oneShot({ delivery: { maxRetries: 2, backoffMs: 100, completionTimeoutMs: 5_000 } }), T0, hourly, null);
    expect(decision.next).toMatchObject({ state: "Fired", tracking: { attempt: 1, firedAtMs: T0, deadlineAtMs: T0 + 5_000 } });
  });

  it("when a recurring timer missed occurrences, then one event stands for the latest and the timer moves on to the next occurrence", () => {
    const repeat = { cron: "0 * * * *", timezone: "UTC", untilMs: null, maxOccurrences: null, firstDueAtMs: T0 - 5 * HOUR_MS };
    const decision = decideFiring(oneShot({ repeat, dueAtMs: T0 - 5 * HOUR_MS, occurrence: 1 }), T0 + 1, hourly, null);
    expect(decision).toMatchObject({
      kind: "reached",
      dueAtMs: T0,
      occurrence: 6,
      missedOccurrences: 5,
      missedOccurrencesCapped: false,
      lateMs: 1,
    });
    expect(decision.next).toMatchObject({ state: "Scheduled", dueAtMs: T0 + HOUR_MS, occurrence: 7 });
  });

  it("when a recurring timer reaches its last occurrence, then it ends as its last event says", () => {
    const repeat = { everyMs: HOUR_MS, untilMs: null, maxOccurrences: 2, firstDueAtMs: T0 - HOUR_MS };
    expect(decideFiring(oneShot({ repeat, dueAtMs: T0, occurrence: 2 }), T0, hourly, null).next).toMatchObject({
      state: "Reached",
      occurrence: 2,
    });
    const late = decideFiring(oneShot({ repeat, dueAtMs: T0, occurrence: 2, maxLatenessMs: 0 }), T0 + 1, hourly, null);
    expect(late).toMatchObject({ kind: "missed", next: { state: "Missed" } });
  });
});
