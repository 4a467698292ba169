import { Cron } from "croner";
import type { RecurrenceCalendar } from "../../domain/recurrence.js";
import { ZoneOffsets } from "./zone-offsets.js";

const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;
const MAX_CRON_LENGTH = 256;
const FALL_BACK_STEP_MS = 15 * MINUTE_MS;
/** Rules kept compiled; past this many the cache starts over (tenants rarely use more than a few). */
const MAX_CACHED_RULES = 10_000;
/**
 * Spans one answer may cross: a rule that matches once in decades crosses one table chunk (about a
 * year) per span; past this many (beyond year 9999 from year 1) there is no answer.
 */
const MAX_SPANS = 20_000;

/**
 * Cron rules with time zones (docs/adr/0006-recurring-timers.md): croner matches the rule on
 * wall-clock fields, and the zone's offsets come from a table of its changes (zone-offsets.ts), so
 * one step costs a UTC match and an addition whatever the zone and the year. The contract's
 * wall-clock rules (CONTRACT §10) are applied at the changes: a local time that does not exist
 * (spring forward) fires once, at the instant the clocks jump; a local time that exists twice (fall
 * back) fires at its first instant only. A rule croner cannot evaluate (it overflows the stack on
 * some rules that never match) has no next time.
 */
export class CronerCalendar implements RecurrenceCalendar {
  readonly #zoned = new Map<string, Cron>();
  /** The rules evaluated on UTC wall-clock fields: "does this local time match?". */
  readonly #wallClock = new Map<string, Cron>();
  readonly #offsets = new ZoneOffsets();

  /** `reference: true` asks croner's own zone arithmetic instead of the offset table (the tests' reference). */
  constructor(private readonly options: { readonly reference: boolean } = { reference: false }) {}

  nextCronTime(cron: string, timezone: string, afterMs: number): number | null {
    try {
      return this.options.reference ? this.#nextInZone(cron, timezone, afterMs) : this.#nextBySpans(cron, timezone, afterMs);
    } catch {
      return null;
    }
  }

  /**
   * Walks the zone's offset spans from `afterMs`: within a span the next matching wall-clock time,
   * less the span's offset, is the answer; a span that starts by repeating wall-clock times skips
   * those that already had their turn; a match that falls into the hour a spring-forward skips
   * fires when the clocks jump.
   */
  #nextBySpans(cron: string, timezone: string, afterMs: number): number | null {
    const job = this.#job(this.#wallClock, cron, "UTC");
    let span = this.#offsets.spanAt(timezone, afterMs);
    let fromMs = afterMs;
    for (let spans = 0; spans < MAX_SPANS; spans++) {
      const offsetMs = span.offsetMs;
      let wallAfterMs = fromMs + offsetMs;
      if (span.previousOffsetMs > offsetMs) wallAfterMs = Math.max(wallAfterMs, span.startMs + span.previousOffsetMs - 1);
      const wall = job.nextRun(new Date(wallAfterMs));
      if (wall === null) return null;
      const wallMs = wall.getTime();
      if (wallMs - offsetMs < span.endMs) return wallMs - offsetMs;
      if (span.nextOffsetMs > offsetMs && wallMs < span.endMs + span.nextOffsetMs) return span.endMs;
      span = this.#offsets.spanAt(timezone, span.endMs);
      fromMs = span.startMs - 1;
    }
    return null;
  }

  /** croner's own zone arithmetic, corrected to the contract at spring-forward gaps and repeated hours. */
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
        !this.#job(this.#wallClock, cron, "UTC").match(new Date(runMs + this.#offsets.offsetAt(timezone, runMs) - jump.gapMs))
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
      // legacyMode (the default): day-of-month OR day-of-week, as in Vixie cron. UTC as an offset:
      // croner's zone arithmetic costs ten times more and adds nothing there.
      const zone = timezone === "UTC" ? { utcOffset: 0 } : { timezone };
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
    const after = this.#offsets.offsetAt(timezone, ms);
    const gapMs = after - this.#offsets.offsetAt(timezone, ms - DAY_MS);
    if (gapMs <= 0) return undefined;
    // Offsets change on whole minutes: binary search for the first minute with the new offset.
    let lo = Math.floor((ms - DAY_MS) / MINUTE_MS);
    let hi = Math.floor(ms / MINUTE_MS);
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (this.#offsets.offsetAt(timezone, mid * MINUTE_MS) === after) hi = mid;
      else lo = mid;
    }
    const atMs = hi * MINUTE_MS;
    return ms < atMs + gapMs ? { atMs, gapMs } : undefined;
  }
}
