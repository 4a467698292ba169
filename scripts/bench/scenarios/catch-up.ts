/**
 * catchUp: the cost of one recurring timer's catch-up after downtime (CONTRACT §10), in process,
 * for the cases the bound is about: a per-minute cron from year 0, a per-minute cron after 60 days,
 * a monthly cron after 100 years in a zone with DST, a weekday cron after 5 years, an every-second
 * rule from year 1, a weekly cron from year 1 in a zone with DST (Santiago). Each case is decided
 * `rounds` times; reports p50 / max milliseconds per decision and whether its count was capped, with
 * the zone offset table the service uses and, for comparison, croner's own zone arithmetic
 * (`cronerZones`). The bound: no decision may hold the event loop for 100 ms; a long one runs off
 * the firing path anyway (catchUpFlood).
 *
 *   npm run bench -- --only catchUp
 */
import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";
import { latestDueOccurrence, type Recurrence } from "../../../src/domain/recurrence.js";
import { round, type BenchContext } from "../harness.js";

const NOW_MS = Date.parse("2026-11-26T12:00:00Z");
const DAY_MS = 86_400_000;

interface Case {
  readonly name: string;
  readonly cron?: string;
  readonly timezone?: string;
  readonly everyMs?: number;
  readonly firstDueAtMs: number;
}

const CASES: readonly Case[] = [
  { name: "cronEveryMinuteFromYear0", cron: "* * * * *", timezone: "UTC", firstDueAtMs: Date.parse("0000-01-01T00:00:00Z") },
  { name: "cronEveryMinuteAfter60Days", cron: "* * * * *", timezone: "UTC", firstDueAtMs: NOW_MS - 60 * DAY_MS },
  { name: "cronEveryMinuteBerlinAfter7Days", cron: "* * * * *", timezone: "Europe/Berlin", firstDueAtMs: NOW_MS - 7 * DAY_MS },
  { name: "cronMonthlyBerlinAfter100Years", cron: "0 3 1 * *", timezone: "Europe/Berlin", firstDueAtMs: NOW_MS - 36_525 * DAY_MS },
  { name: "cronWeekdaysNewYorkAfter5Years", cron: "0 9 * * MON-FRI", timezone: "America/New_York", firstDueAtMs: NOW_MS - 1_826 * DAY_MS },
  { name: "everySecondFromYear1", everyMs: 1000, firstDueAtMs: Date.parse("0001-01-01T00:00:00Z") },
  {
    name: "cronWeeklySantiagoFromYear1",
    cron: "30 2 * * 0",
    timezone: "America/Santiago",
    firstDueAtMs: Date.parse("0001-01-01T00:00:00Z"),
  },
];

export async function catchUp(ctx: BenchContext): Promise<Record<string, unknown>> {
  return { ...decideCases(ctx, false), cronerZones: decideCases(ctx, true) };
}

function decideCases(ctx: BenchContext, croner: boolean): Record<string, unknown> {
  const rounds = ctx.quick ? 3 : 10;
  const results: Record<string, unknown> = {};
  for (const c of CASES) {
    // A fresh calendar per round: compiled rules and zone formats are not cached across rounds.
    const times: number[] = [];
    let capped = false;
    let skipped = 0;
    for (let r = 0; r < rounds; r++) {
      const calendar = new CronerCalendar({ reference: croner });
      const first = c.cron === undefined ? c.firstDueAtMs : calendar.nextCronTime(c.cron, c.timezone!, c.firstDueAtMs - 1)!;
      const rule: Recurrence =
        c.cron === undefined
          ? { everyMs: c.everyMs!, untilMs: null, maxOccurrences: null, firstDueAtMs: first }
          : { cron: c.cron, timezone: c.timezone!, untilMs: null, maxOccurrences: null, firstDueAtMs: first };
      const started = performance.now();
      const result = latestDueOccurrence(rule, { dueAtMs: first, occurrence: 1 }, NOW_MS, calendar);
      times.push(performance.now() - started);
      capped = result.capped;
      skipped = result.skipped;
    }
    times.sort((a, b) => a - b);
    results[c.name] = { p50Ms: round(times[Math.floor(times.length / 2)]!, 2), maxMs: round(times[times.length - 1]!, 2), skipped, capped };
    ctx.log(
      `catchUp ${croner ? "croner zones " : ""}${c.name}: p50 ${round(times[Math.floor(times.length / 2)]!, 2)} ms, max ${round(times[times.length - 1]!, 2)} ms`,
    );
  }
  return results;
}
