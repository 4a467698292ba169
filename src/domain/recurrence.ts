import { formatInstant, parseInstant } from "./due-time.js";

/**
 * The `repeat` rule of a recurring timer (CONTRACT §10): every `everyMs`, or at the times of a
 * 5-field `cron` expression in an IANA `timezone`, optionally bounded by `until` (inclusive) and
 * `maxOccurrences`. `firstDueAtMs` is occurrence 1 (for cron: the first cron time at or after the
 * command's `dueAt`); together with the rule it defines the series, so that a re-sent
 * `ScheduleTimer` is recognized as the same command although the timer has moved on.
 */
export type Recurrence = EveryRecurrence | CronRecurrence;

interface RecurrenceBounds {
  readonly untilMs: number | null;
  readonly maxOccurrences: number | null;
  readonly firstDueAtMs: number;
}

export interface EveryRecurrence extends RecurrenceBounds {
  readonly everyMs: number;
  readonly cron?: undefined;
  readonly timezone?: undefined;
}

export interface CronRecurrence extends RecurrenceBounds {
  readonly cron: string;
  readonly timezone: string;
  readonly everyMs?: undefined;
}

/**
 * Wall-clock arithmetic for cron rules, implemented by an adapter (a cron library). Times are epoch
 * milliseconds.
 */
export interface RecurrenceCalendar {
  /**
   * The first instant strictly after `afterMs` at which `cron` matches in `timezone`, or null when
   * there is none. A local time that does not exist that day (spring forward) is the instant the
   * clocks jump; a local time that exists twice (fall back) is its first instant only.
   */
  nextCronTime(cron: string, timezone: string, afterMs: number): number | null;
  /** Why `cron` (5 fields) or `timezone` (IANA) is unusable, naming which; undefined when both are fine. */
  problem(cron: string, timezone: string): { readonly field: "cron" | "timezone"; readonly reason: string } | undefined;
}

/** 9999-12-31T23:59:59.999Z: the last instant events can carry with a four-digit year. */
export const LATEST_INSTANT_MS = 253_402_300_799_999;

/** One occurrence of a series: its due time and its number (1, 2, …). */
export interface Occurrence {
  readonly dueAtMs: number;
  readonly occurrence: number;
}

/**
 * The occurrence after `current` (from its due time, so no drift accumulates), or null when the
 * series ends there (`until`, `maxOccurrences`, the end of representable time, a cron that never
 * matches again).
 */
export function nextOccurrence(rule: Recurrence, current: Occurrence, calendar: RecurrenceCalendar): Occurrence | null {
  const occurrence = current.occurrence + 1;
  if (rule.maxOccurrences !== null && occurrence > rule.maxOccurrences) return null;
  const dueAtMs =
    rule.everyMs !== undefined ? current.dueAtMs + rule.everyMs : calendar.nextCronTime(rule.cron, rule.timezone, current.dueAtMs);
  if (dueAtMs === null || dueAtMs > LATEST_INSTANT_MS) return null;
  if (rule.untilMs !== null && dueAtMs > rule.untilMs) return null;
  return { dueAtMs, occurrence };
}

/**
 * How many missed occurrences of a cron rule a catch-up counts one by one (CONTRACT §10); past it,
 * it jumps to the latest occurrence due and the counts become lower bounds.
 */
export const MAX_EXACT_CATCH_UP = 1_000;

/** Where a catch-up lands: the latest due occurrence and how many earlier ones it stands for. */
export interface CatchUp {
  readonly latest: Occurrence;
  /** Occurrences skipped over; a lower bound when `capped`. */
  readonly skipped: number;
  /** More than `MAX_EXACT_CATCH_UP` were skipped: `skipped` and `latest.occurrence` are lower bounds. */
  readonly capped: boolean;
}

/**
 * The latest occurrence at or before `nowMs`, starting from `current` (which is due), and how many
 * occurrences it skipped over. Bounded work whatever the gap: an interval rule jumps there by
 * arithmetic (exact); a cron rule steps through at most `MAX_EXACT_CATCH_UP` occurrences, then
 * searches for the latest one due by bisection over time.
 */
export function latestDueOccurrence(rule: Recurrence, current: Occurrence, nowMs: number, calendar: RecurrenceCalendar): CatchUp {
  if (rule.everyMs !== undefined) {
    let steps = Math.floor((nowMs - current.dueAtMs) / rule.everyMs);
    if (rule.maxOccurrences !== null) steps = Math.min(steps, rule.maxOccurrences - current.occurrence);
    if (rule.untilMs !== null) steps = Math.min(steps, Math.floor((rule.untilMs - current.dueAtMs) / rule.everyMs));
    steps = Math.max(0, Math.min(steps, Math.floor((LATEST_INSTANT_MS - current.dueAtMs) / rule.everyMs)));
    const latest = { dueAtMs: current.dueAtMs + steps * rule.everyMs, occurrence: current.occurrence + steps };
    return { latest, skipped: steps, capped: false };
  }
  let latest = current;
  for (let skipped = 0; ; skipped++) {
    const next = nextOccurrence(rule, latest, calendar);
    if (next === null || next.dueAtMs > nowMs) return { latest, skipped, capped: false };
    if (skipped === MAX_EXACT_CATCH_UP) {
      const lastDueMs = latestCronTimeBetween(rule, next.dueAtMs, nowMs, calendar);
      return { latest: { dueAtMs: lastDueMs, occurrence: next.occurrence }, skipped: skipped + 1, capped: true };
    }
    latest = next;
  }
}

/**
 * The latest time of a cron rule in [`fromMs`, min(`nowMs`, until)], `fromMs` being one: the
 * largest t whose next cron time is still due, by bisection (about 50 calendar calls over all of
 * representable time), then a few steps on in case the calendar is not monotonic at a DST edge.
 */
function latestCronTimeBetween(rule: CronRecurrence, fromMs: number, nowMs: number, calendar: RecurrenceCalendar): number {
  const endMs = Math.min(nowMs, rule.untilMs ?? nowMs, LATEST_INSTANT_MS);
  const dueAfter = (ms: number): number | null => {
    const next = calendar.nextCronTime(rule.cron, rule.timezone, ms);
    return next !== null && next <= endMs ? next : null;
  };
  let low = fromMs;
  let high = endMs;
  while (high - low > 1) {
    const middle = low + Math.floor((high - low) / 2);
    if (dueAfter(middle) !== null) low = middle;
    else high = middle;
  }
  let latestMs = Math.max(fromMs, dueAfter(low) ?? fromMs);
  for (let step = 0; step < 4; step++) {
    const next = dueAfter(latestMs);
    if (next === null) break;
    latestMs = next;
  }
  return latestMs;
}

/** The first occurrence of a rule for a command's `dueAt`, or null when the rule has none. */
export function firstOccurrenceAt(
  rule: Omit<EveryRecurrence, "firstDueAtMs"> | Omit<CronRecurrence, "firstDueAtMs">,
  dueAtMs: number,
  calendar: RecurrenceCalendar,
): number | null {
  const first = rule.everyMs !== undefined ? dueAtMs : calendar.nextCronTime(rule.cron, rule.timezone, dueAtMs - 1);
  if (first === null || first > LATEST_INSTANT_MS) return null;
  if (rule.untilMs !== null && first > rule.untilMs) return null;
  return first;
}

/**
 * The stored text of a rule: JSON in the message's own shape (`until` and `firstDueAt` as UTC
 * instants), members in a fixed order so that equal rules have equal text.
 */
export function recurrenceText(rule: Recurrence): string {
  const head = rule.everyMs !== undefined ? { everyMs: rule.everyMs } : { cron: rule.cron, timezone: rule.timezone };
  return JSON.stringify({
    ...head,
    ...(rule.untilMs === null ? {} : { until: formatInstant(rule.untilMs) }),
    ...(rule.maxOccurrences === null ? {} : { maxOccurrences: rule.maxOccurrences }),
    firstDueAt: formatInstant(rule.firstDueAtMs),
  });
}

/** Reads a rule written by `recurrenceText`. Throws on anything else (corrupt storage). */
export function parseRecurrence(text: string): Recurrence {
  const json = JSON.parse(text) as Record<string, unknown>;
  const instant = (value: unknown): number => {
    const ms = typeof value === "string" ? parseInstant(value) : undefined;
    if (ms === undefined) throw new Error(`stored repeat rule has a malformed instant: ${text}`);
    return ms;
  };
  const bounds: RecurrenceBounds = {
    untilMs: json.until === undefined ? null : instant(json.until),
    maxOccurrences: typeof json.maxOccurrences === "number" ? json.maxOccurrences : null,
    firstDueAtMs: instant(json.firstDueAt),
  };
  if (typeof json.everyMs === "number") return { everyMs: json.everyMs, ...bounds };
  if (typeof json.cron === "string" && typeof json.timezone === "string") return { cron: json.cron, timezone: json.timezone, ...bounds };
  throw new Error(`stored repeat rule is malformed: ${text}`);
}

export function sameRecurrence(a: Recurrence | null, b: Recurrence | null): boolean {
  if (a === null || b === null) return a === b;
  return (
    a.everyMs === b.everyMs &&
    a.cron === b.cron &&
    a.timezone === b.timezone &&
    a.untilMs === b.untilMs &&
    a.maxOccurrences === b.maxOccurrences &&
    a.firstDueAtMs === b.firstDueAtMs
  );
}
