/** Series arithmetic (CONTRACT §10), pure: occurrences, bounds, the bounded catch-up, the stored text. */
import { describe, expect, it } from "vitest";
import {
  LATEST_INSTANT_MS,
  MAX_EXACT_CATCH_UP,
  firstOccurrenceAt,
  latestDueOccurrence,
  nextOccurrence,
  parseRecurrence,
  recurrenceText,
  sameRecurrence,
  type RecurrenceCalendar,
} from "../../../src/domain/recurrence.js";

const MINUTE_MS = 60_000;
const T0 = Date.parse("2026-11-28T12:00:00Z");

/** "Every minute" by arithmetic, counting the questions asked. */
class MinuteCalendar implements RecurrenceCalendar {
  calls = 0;
  nextCronTime(_cron: string, _zone: string, afterMs: number): number | null {
    this.calls++;
    return (Math.floor(afterMs / MINUTE_MS) + 1) * MINUTE_MS;
  }
  problem() {
    return undefined;
  }
}

const everyMinute = (fields = {}) => ({
  cron: "* * * * *",
  timezone: "UTC",
  untilMs: null,
  maxOccurrences: null,
  firstDueAtMs: T0,
  ...fields,
});

describe("recurrence", () => {
  it("when stepping, then the next occurrence follows the due time (no drift) and stops at until, maxOccurrences and year 9999", () => {
    const calendar = new MinuteCalendar();
    expect(
      nextOccurrence({ everyMs: 5_000, untilMs: null, maxOccurrences: null, firstDueAtMs: T0 }, { dueAtMs: T0, occurrence: 1 }, calendar),
    ).toEqual({
      dueAtMs: T0 + 5_000,
      occurrence: 2,
    });
    expect(nextOccurrence(everyMinute({ untilMs: T0 + MINUTE_MS - 1 }), { dueAtMs: T0, occurrence: 1 }, calendar)).toBeNull();
    expect(nextOccurrence(everyMinute({ maxOccurrences: 1 }), { dueAtMs: T0, occurrence: 1 }, calendar)).toBeNull();
    expect(
      nextOccurrence(
        { everyMs: 1_000, untilMs: null, maxOccurrences: null, firstDueAtMs: T0 },
        { dueAtMs: LATEST_INSTANT_MS, occurrence: 9 },
        calendar,
      ),
    ).toBeNull();
  });

  it("when a cron series missed more than the exact cap, then the catch-up lands on the latest due time with capped counts, in bounded calendar calls", () => {
    const calendar = new MinuteCalendar();
    const nowMs = T0 + 10_000 * MINUTE_MS + 30_000;
    const result = latestDueOccurrence(everyMinute(), { dueAtMs: T0, occurrence: 1 }, nowMs, calendar);
    expect(result.capped).toBe(true);
    expect(result.latest.dueAtMs).toBe(T0 + 10_000 * MINUTE_MS);
    expect(result.skipped).toBe(MAX_EXACT_CATCH_UP + 1);
    expect(calendar.calls).toBeLessThan(MAX_EXACT_CATCH_UP + 80);
  });

  it("when an interval series missed any number, then the catch-up is exact by arithmetic", () => {
    const rule = { everyMs: 1_000, untilMs: null, maxOccurrences: null, firstDueAtMs: T0 };
    expect(latestDueOccurrence(rule, { dueAtMs: T0, occurrence: 1 }, T0 + 123_456, new MinuteCalendar())).toEqual({
      latest: { dueAtMs: T0 + 123_000, occurrence: 124 },
      skipped: 123,
      capped: false,
    });
  });

  it("when a rule has no occurrence at or after dueAt (or it is past until), then there is no first occurrence", () => {
    const never: RecurrenceCalendar = { nextCronTime: () => null, problem: () => undefined };
    expect(firstOccurrenceAt({ cron: "0 0 30 2 *", timezone: "UTC", untilMs: null, maxOccurrences: null }, T0, never)).toBeNull();
    expect(
      firstOccurrenceAt({ cron: "* * * * *", timezone: "UTC", untilMs: T0, maxOccurrences: null }, T0 + 1, new MinuteCalendar()),
    ).toBeNull();
    expect(firstOccurrenceAt({ cron: "* * * * *", timezone: "UTC", untilMs: null, maxOccurrences: null }, T0, new MinuteCalendar())).toBe(
      T0,
    );
  });

  it("when a rule is stored as text, then it reads back equal, and equal rules have equal text", () => {
    const rule = everyMinute({ untilMs: T0 + 3_600_000, maxOccurrences: 5, timezone: "Europe/Berlin" });
    const text = recurrenceText(rule);
    expect(sameRecurrence(parseRecurrence(text), rule)).toBe(true);
    expect(recurrenceText(parseRecurrence(text))).toBe(text);
    expect(() => parseRecurrence('{"firstDueAt":"soon"}')).toThrow(/malformed/);
  });
});
