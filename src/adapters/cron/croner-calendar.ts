import { Cron } from "croner";
import type { RecurrenceCalendar } from "../../domain/recurrence.js";

const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;
const MAX_CRON_LENGTH = 256;
const FALL_BACK_STEP_MS = 15 * MINUTE_MS;
const OFFSET_SAMPLE_MS = 7 * DAY_MS;
const FIXED_OFFSET_SPAN_MS = 366 * DAY_MS;
/** Rules kept compiled; past this many the cache starts over (tenants rarely use more than a few). */
const MAX_CACHED_RULES = 10_000;

/**
 * Cron rules with time zones, computed by croner (docs/adr/0006-recurring-timers.md). croner walks
 * wall-clock times in the zone, so a 09:00 rule stays 09:00 across DST changes, and a local time
 * that exists twice (fall back) comes once, at its first instant. One difference to CONTRACT §10 is
 * corrected here: croner moves a local time that does not exist (spring forward) by the length of
 * the gap (02:30 → 03:30), where the contract asks for the next valid instant, the moment the clocks
 * jump (03:00). And asked from inside a repeated hour, croner can answer an instant before the one
 * asked from; such answers are skipped (the wall time had its turn in the first pass).
 */
export class CronerCalendar implements RecurrenceCalendar {
  readonly #zoned = new Map<string, Cron>();
  /** The same rules at a fixed UTC offset: far cheaper than croner's zone arithmetic. */
  readonly #fixedOffset = new Map<string, Cron>();
  /** The same rules evaluated on UTC wall-clock fields: "does this local time match?". */
  readonly #wallClock = new Map<string, Cron>();
  readonly #offsetFormats = new Map<string, Intl.DateTimeFormat>();

  /** `fixedOffsetShortcut: false` always asks croner's zone arithmetic (the tests' reference). */
  constructor(private readonly options: { readonly fixedOffsetShortcut: boolean } = { fixedOffsetShortcut: true }) {}

  nextCronTime(cron: string, timezone: string, afterMs: number): number | null {
    const shortcut = this.options.fixedOffsetShortcut ? this.#nextAtFixedOffset(cron, timezone, afterMs) : undefined;
    return shortcut ?? this.#nextInZone(cron, timezone, afterMs);
  }

  /**
   * The next time where the zone keeps one offset from a day before `afterMs` to a day after the
   * answer, so that its wall clock is UTC shifted by that offset; undefined when the zone changes
   * offset in between (or the answer is over a year away) and the zone's rules must decide. The
   * offset is sampled weekly in between: zones change offset at most twice within months (the
   * shortest known there-and-back, Morocco's Ramadan hour, lasts about a month). A catch-up walks up
   * to a thousand occurrences, so each step must be cheap; croner's zone arithmetic is not.
   */
  #nextAtFixedOffset(cron: string, timezone: string, afterMs: number): number | null | undefined {
    if (timezone === "UTC") return this.#job(this.#fixedOffset, cron, "0").nextRun(new Date(afterMs))?.getTime() ?? null;
    const offsetMs = this.#offsetMs(afterMs, timezone, true);
    if (Number.isNaN(offsetMs) || this.#offsetMs(afterMs - DAY_MS, timezone, true) !== offsetMs) return undefined;
    const run = this.#job(this.#fixedOffset, cron, `${offsetMs / MINUTE_MS}`).nextRun(new Date(afterMs));
    if (run === null) return undefined;
    const runMs = run.getTime();
    if (runMs - afterMs > FIXED_OFFSET_SPAN_MS) return undefined;
    for (let sampleMs = afterMs + OFFSET_SAMPLE_MS; sampleMs < runMs; sampleMs += OFFSET_SAMPLE_MS) {
      if (this.#offsetMs(sampleMs, timezone, true) !== offsetMs) return undefined;
    }
    return this.#offsetMs(runMs + DAY_MS, timezone, true) === offsetMs ? runMs : undefined;
  }

  #nextInZone(cron: string, timezone: string, afterMs: number): number | null {
    const job = this.#job(this.#zoned, cron, timezone);
    let from = afterMs;
    // A few rounds at most: only a run of shifted times at a spring-forward gap repeats.
    for (let round = 0; round < 1_000; round++) {
      const run = job.nextRun(new Date(from));
      if (run === null) return null;
      const runMs = run.getTime();
      if (runMs <= from) {
        // Started inside a repeated hour (fall back), croner answers the first instant of a wall time
        // that is already past: that wall time had its turn, look on from later.
        from += FALL_BACK_STEP_MS;
        continue;
      }
      const jump = this.#gapBefore(runMs, timezone);
      if (
        jump === undefined ||
        !this.#job(this.#wallClock, cron, "UTC").match(new Date(runMs + this.#offsetMs(runMs, timezone) - jump.gapMs))
      ) {
        return runMs;
      }
      // croner shifted a local time inside the gap: it fires when the clocks jump, once.
      if (jump.atMs > afterMs) return jump.atMs;
      if (job.match(run)) return runMs;
      from = runMs;
    }
    return null;
  }

  problem(cron: string, timezone: string): { field: "cron" | "timezone"; reason: string } | undefined {
    try {
      new Intl.DateTimeFormat("en-US", { timeZone: timezone });
    } catch {
      return { field: "timezone", reason: `"${timezone}" is not an IANA time zone` };
    }
    if (cron.length > MAX_CRON_LENGTH) return { field: "cron", reason: `longer than ${MAX_CRON_LENGTH} characters` };
    if (cron.trim().split(/\s+/).length !== 5)
      return { field: "cron", reason: "needs 5 fields: minute hour day-of-month month day-of-week" };
    try {
      this.#job(this.#zoned, cron, timezone);
    } catch (error) {
      return { field: "cron", reason: error instanceof Error ? error.message.replace(/^CronPattern: /, "") : "malformed" };
    }
    return undefined;
  }

  #job(cache: Map<string, Cron>, cron: string, timezone: string): Cron {
    const key = `${timezone}\u0000${cron}`;
    let job = cache.get(key);
    if (job === undefined) {
      if (cache.size >= MAX_CACHED_RULES) cache.clear();
      // legacyMode (the default): day-of-month OR day-of-week, as in Vixie cron. The fixed-offset
      // cache keys its rules by the offset in minutes instead of a zone name.
      const zone = cache === this.#fixedOffset ? { utcOffset: Number(timezone) } : { timezone };
      job = new Cron(cron, { ...zone, mode: "5-part", paused: true });
      cache.set(key, job);
    }
    return job;
  }

  /**
   * A spring-forward transition in the day before `ms` that `ms` lies within one gap-length after:
   * when the clocks jumped, and by how much. Undefined otherwise.
   */
  #gapBefore(ms: number, timezone: string): { atMs: number; gapMs: number } | undefined {
    const after = this.#offsetMs(ms, timezone);
    const gapMs = after - this.#offsetMs(ms - DAY_MS, timezone);
    if (gapMs <= 0) return undefined;
    // Offsets change on whole minutes: binary search for the first minute with the new offset.
    let lo = Math.floor((ms - DAY_MS) / MINUTE_MS);
    let hi = Math.floor(ms / MINUTE_MS);
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (this.#offsetMs(mid * MINUTE_MS, timezone) === after) hi = mid;
      else lo = mid;
    }
    const atMs = hi * MINUTE_MS;
    return ms < atMs + gapMs ? { atMs, gapMs } : undefined;
  }

  /**
   * The zone's UTC offset at `ms`, in whole minutes as milliseconds; `wholeMinutes` asks for NaN
   * instead when the offset has seconds (local mean time before standard time, until 1972 in places).
   */
  #offsetMs(ms: number, timezone: string, wholeMinutes = false): number {
    let format = this.#offsetFormats.get(timezone);
    if (format === undefined) {
      format = new Intl.DateTimeFormat("en-US", { timeZone: timezone, timeZoneName: "longOffset" });
      this.#offsetFormats.set(timezone, format);
    }
    const name = format.formatToParts(ms).find((part) => part.type === "timeZoneName")?.value ?? "GMT";
    const m = /GMT([+-])(\d{2}):?(\d{2})?(:\d{2})?/.exec(name);
    if (m === null) return 0;
    if (wholeMinutes && m[4] !== undefined) return Number.NaN;
    return (m[1] === "-" ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3] ?? 0)) * MINUTE_MS;
  }
}
