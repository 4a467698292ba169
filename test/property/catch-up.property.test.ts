/**
 * The catch-up of a recurring timer after downtime (CONTRACT §10): for random rules (everyMs or
 * cron in several zones, with until and maxOccurrences), random first due times back to year 1 and
 * downtimes up to 100 years, the decision is bounded — its calendar calls never exceed the exact
 * walk's cap plus the bisection, whatever the gap — and it matches a reference count, one
 * occurrence at a time, wherever the count is exact. The wall time of a catch-up is measured by
 * `npm run bench` (scenario catchUp), not asserted here.
 *
 * Reproduce a failure with FC_SEED=<seed printed by fast-check>.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CronerCalendar } from "../../src/adapters/cron/croner-calendar.js";
import {
  LATEST_INSTANT_MS,
  MAX_EXACT_CATCH_UP,
  latestDueOccurrence,
  nextOccurrence,
  type Occurrence,
  type Recurrence,
  type RecurrenceCalendar,
} from "../../src/domain/recurrence.js";

const YEAR_MS = 365.25 * 86_400_000;
const YEAR_1_MS = Date.parse("0001-01-01T00:00:00Z");
/** Calls a catch-up may make beyond the exact walk: the bisection over all of time and its checks. */
const BISECTION_CALLS = 64;

class CountingCalendar implements RecurrenceCalendar {
  calls = 0;
  constructor(private readonly inner: RecurrenceCalendar) {}
  nextCronTime(cron: string, timezone: string, afterMs: number): number | null {
    this.calls++;
    return this.inner.nextCronTime(cron, timezone, afterMs);
  }
  problem(cron: string, timezone: string) {
    return this.inner.problem(cron, timezone);
  }
}

const calendar = new CronerCalendar();
const reference = new CronerCalendar({ reference: true });

/** Steps one occurrence at a time, up to `limit` steps: the count a catch-up must match when exact. */
function walk(rule: Recurrence, current: Occurrence, nowMs: number, limit: number): { latest: Occurrence; skipped: number } | "beyond" {
  let latest = current;
  for (let skipped = 0; skipped <= limit; skipped++) {
    const next = nextOccurrence(rule, latest, reference);
    if (next === null || next.dueAtMs > nowMs) return { latest, skipped };
    latest = next;
  }
  return "beyond";
}

const cronRule = fc.record({
  cron: fc.constantFrom("* * * * *", "*/5 * * * *", "30 2 * * *", "0 9 * * MON-FRI", "0 3 1 * *", "15 1,2,3 * * 0", "0 0 29 2 *"),
  timezone: fc.constantFrom("UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"),
});
const everyRule = fc.record({ everyMs: fc.integer({ min: 1000, max: 40 * 86_400_000 }) });
const bounds = fc.record({
  untilAfterFirstMs: fc.option(fc.integer({ min: 0, max: Math.floor(120 * YEAR_MS) }), { nil: null }),
  maxOccurrences: fc.option(fc.integer({ min: 1, max: 5_000 }), { nil: null }),
});
/** First due times back to year 1, downtimes from seconds to 100 years (often short, so that counts are exact). */
const timing = fc.record({
  firstDueAtMs: fc.oneof(
    fc.integer({ min: YEAR_1_MS, max: Date.parse("2030-01-01T00:00:00Z") }),
    fc.integer({ min: Date.parse("2000-01-01T00:00:00Z"), max: Date.parse("2030-01-01T00:00:00Z") }),
  ),
  downtimeMs: fc.oneof(fc.integer({ min: 0, max: 3 * 86_400_000 }), fc.integer({ min: 0, max: Math.floor(100 * YEAR_MS) })),
});

function ruleOf(
  shape: { cron: string; timezone: string } | { everyMs: number },
  b: { untilAfterFirstMs: number | null; maxOccurrences: number | null },
  firstDueAtMs: number,
): Recurrence {
  const untilMs = b.untilAfterFirstMs === null ? null : Math.min(firstDueAtMs + b.untilAfterFirstMs, LATEST_INSTANT_MS);
  return { ...shape, untilMs, maxOccurrences: b.maxOccurrences, firstDueAtMs } as Recurrence;
}

describe("catch-up of a recurring timer after downtime", () => {
  it("when any rule missed any number of occurrences, then the catch-up is bounded and exact where the count is exact", () => {
    fc.assert(
      fc.property(fc.oneof(cronRule, everyRule), bounds, timing, (shape, b, t) => {
        const probe = ruleOf(shape, b, t.firstDueAtMs);
        // For cron the first occurrence is the first cron time at or after dueAt.
        const firstMs = probe.cron === undefined ? t.firstDueAtMs : calendar.nextCronTime(probe.cron, probe.timezone, t.firstDueAtMs - 1);
        fc.pre(firstMs !== null && firstMs <= LATEST_INSTANT_MS && (probe.untilMs === null || firstMs <= probe.untilMs));
        const rule = { ...probe, firstDueAtMs: firstMs! };
        const current = { dueAtMs: firstMs!, occurrence: 1 };
        const nowMs = Math.min(firstMs! + t.downtimeMs, LATEST_INSTANT_MS);

        const counting = new CountingCalendar(calendar);
        const catchUp = latestDueOccurrence(rule, current, nowMs, counting);
        expect(counting.calls).toBeLessThanOrEqual(MAX_EXACT_CATCH_UP + 1 + BISECTION_CALLS);

        expect(catchUp.latest.dueAtMs).toBeLessThanOrEqual(nowMs);
        if (rule.untilMs !== null) expect(catchUp.latest.dueAtMs).toBeLessThanOrEqual(rule.untilMs);
        // Latest: the occurrence after it is not due yet (or the series ends).
        const following = nextOccurrence(rule, catchUp.latest, reference);
        if (!catchUp.capped || rule.maxOccurrences === null) expect(following === null || following.dueAtMs > nowMs).toBe(true);

        if (rule.everyMs !== undefined) {
          expect(catchUp.capped).toBe(false);
          const steps = Math.floor((catchUp.latest.dueAtMs - current.dueAtMs) / rule.everyMs);
          expect(catchUp.skipped).toBe(steps);
          expect(catchUp.latest.occurrence).toBe(1 + steps);
          if (rule.maxOccurrences !== null) expect(catchUp.latest.occurrence).toBeLessThanOrEqual(rule.maxOccurrences);
          return;
        }
        const exact = walk(rule, current, nowMs, MAX_EXACT_CATCH_UP);
        if (exact === "beyond") {
          expect(catchUp.capped).toBe(true);
          expect(catchUp.skipped).toBe(MAX_EXACT_CATCH_UP + 1);
        } else {
          expect(catchUp).toEqual({ latest: exact.latest, skipped: exact.skipped, capped: false });
        }
      }),
      { numRuns: 150 },
    );
    // CPU-bound: the reference walks up to a thousand cron steps per case; on a shared, loaded
    // machine the 150 cases take well past vitest's default, which is meant for hangs.
  }, 300_000);

  it("when an every-second rule starts in year 1, then one arithmetic step reaches today with the exact count", () => {
    const firstDueAtMs = YEAR_1_MS;
    const nowMs = Date.parse("2026-11-26T12:00:00Z");
    const catchUp = latestDueOccurrence(
      { everyMs: 1000, untilMs: null, maxOccurrences: null, firstDueAtMs },
      { dueAtMs: firstDueAtMs, occurrence: 1 },
      nowMs,
      calendar,
    );
    expect(catchUp).toEqual({
      latest: { dueAtMs: nowMs, occurrence: (nowMs - firstDueAtMs) / 1000 + 1 },
      skipped: (nowMs - firstDueAtMs) / 1000,
      capped: false,
    });
  });

  it("when a per-minute cron starts in year 0, then the catch-up lands on the latest minute with a capped count", () => {
    const counting = new CountingCalendar(calendar);
    const firstDueAtMs = calendar.nextCronTime("* * * * *", "UTC", Date.parse("0000-01-01T00:00:00Z") - 1)!;
    const nowMs = Date.parse("2026-11-26T12:34:56.789Z");
    const rule: Recurrence = { cron: "* * * * *", timezone: "UTC", untilMs: null, maxOccurrences: null, firstDueAtMs };
    const catchUp = latestDueOccurrence(rule, { dueAtMs: firstDueAtMs, occurrence: 1 }, nowMs, counting);
    expect(catchUp).toEqual({
      latest: { dueAtMs: Date.parse("2026-11-26T12:34:00Z"), occurrence: MAX_EXACT_CATCH_UP + 2 },
      skipped: MAX_EXACT_CATCH_UP + 1,
      capped: true,
    });
    expect(counting.calls).toBeLessThanOrEqual(MAX_EXACT_CATCH_UP + 1 + BISECTION_CALLS);
  });
});

describe("CronerCalendar's zone offset table", () => {
  it("when asked anywhere in 1900–2100 in zones with DST, then it answers as croner's zone arithmetic does", () => {
    fc.assert(
      fc.property(
        cronRule,
        fc.integer({ min: Date.parse("1900-01-01T00:00:00Z"), max: Date.parse("2100-01-01T00:00:00Z") }),
        (rule, afterMs) => {
          expect(calendar.nextCronTime(rule.cron, rule.timezone, afterMs)).toBe(reference.nextCronTime(rule.cron, rule.timezone, afterMs));
        },
      ),
      { numRuns: 2_000 },
    );
  });
});
