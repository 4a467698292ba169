/** CronerCalendar at DST edges (CONTRACT §10 wall-clock rules), where croner alone differs. */
import { describe, expect, it } from "vitest";
import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";

const calendar = new CronerCalendar();
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function series(cron: string, timezone: string, from: string, count: number): (string | null)[] {
  const out: (string | null)[] = [];
  let t = Date.parse(from);
  for (let i = 0; i < count; i++) {
    const next = calendar.nextCronTime(cron, timezone, t);
    out.push(iso(next));
    if (next === null) break;
    t = next;
  }
  return out;
}

describe("CronerCalendar.nextCronTime", () => {
  it("when several times of one rule fall into the spring-forward gap, then they fire once, when the clocks jump", () => {
    expect(series("15,45 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 3)).toEqual([
      "2026-03-29T01:00:00.000Z",
      "2026-03-30T00:15:00.000Z",
      "2026-03-30T00:45:00.000Z",
    ]);
  });

  it("when a rule has times in the gap and right after it, then the gap fires at the jump and the later time still fires", () => {
    expect(series("30 2,3 * * *", "Europe/Berlin", "2026-03-29T00:00:00Z", 3)).toEqual([
      "2026-03-29T01:00:00.000Z",
      "2026-03-29T01:30:00.000Z",
      "2026-03-30T00:30:00.000Z",
    ]);
  });

  it("when a zone jumps by 30 minutes (Lord Howe), then a time in the gap fires at the jump", () => {
    expect(series("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z", 2)).toEqual([
      "2026-10-03T15:30:00.000Z",
      "2026-10-04T15:15:00.000Z",
    ]);
  });

  it("when an hourly rule crosses fall back, then the repeated hour fires once", () => {
    expect(series("0 * * * *", "Europe/Berlin", "2026-10-24T23:30:00Z", 3)).toEqual([
      "2026-10-25T00:00:00.000Z",
      "2026-10-25T02:00:00.000Z",
      "2026-10-25T03:00:00.000Z",
    ]);
  });

  it("when asked from inside the repeated hour, then the answer is never at or before the instant asked from", () => {
    expect(series("30 2 * * *", "Europe/Berlin", "2026-10-25T01:15:00Z", 1)).toEqual(["2026-10-26T01:30:00.000Z"]);
  });

  it("when a rule never matches, then there is no next time", () => {
    expect(calendar.nextCronTime("0 0 30 2 *", "UTC", Date.parse("2026-01-01T00:00:00Z"))).toBeNull();
  });
});

describe("CronerCalendar.problem", () => {
  it("when rule and zone are fine, then there is no problem; otherwise it names the field", () => {
    expect(calendar.problem("0 9 * * MON-FRI", "America/New_York")).toBeUndefined();
    expect(calendar.problem("0 9 * * *", "Not/A_Zone")?.field).toBe("timezone");
    expect(calendar.problem("0 25 * * *", "UTC")?.field).toBe("cron");
    expect(calendar.problem("x".repeat(300), "UTC")?.field).toBe("cron");
  });
});
