/**
 * Spaces the due-timer polls while timers fire at a sustained rate, so that one poll publishes and
 * records many of them in one commit instead of one commit per timer (a commit, the due-index
 * lookups and a flush per poll cost more than the firing itself; docs/benchmarks.md has the
 * figures). A quiet service keeps its precise wake-ups: the spacing applies
 * only above `sustainedPerSecond`, where it adds at most `minSpacingMs` of lag.
 */
export class PollSpacing {
  /** Timers found, decayed with time constant DECAY_MS: `score / (DECAY_MS / 1000)` is the rate per second. */
  private score = 0;
  private lastPollAtMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly options: {
      /** The least time between the starts of two polls under sustained load. */
      readonly minSpacingMs: number;
      /** Firing rate (timers found per second) from which polls are spaced. */
      readonly sustainedPerSecond: number;
    },
  ) {}

  /** A poll started at `atMs` and its chain found `found` due timers. */
  recordPoll(atMs: number, found: number): void {
    const elapsedMs = Math.max(0, atMs - this.lastPollAtMs);
    this.score = this.score * Math.exp(-elapsedMs / DECAY_MS) + found;
    this.lastPollAtMs = atMs;
  }

  /** Timers found per second, lately. */
  ratePerSecond(nowMs: number): number {
    const elapsedMs = Math.max(0, nowMs - this.lastPollAtMs);
    return (this.score * Math.exp(-elapsedMs / DECAY_MS) * 1000) / DECAY_MS;
  }

  /** The sleep before the next poll: `delayMs`, stretched to the spacing while the rate is sustained. */
  delayMs(delayMs: number, nowMs: number): number {
    if (this.ratePerSecond(nowMs) < this.options.sustainedPerSecond) return delayMs;
    // Capped at the spacing itself: after the wall clock steps back, lastPollAtMs lies ahead of now.
    const spacingMs = Math.min(this.options.minSpacingMs, this.lastPollAtMs + this.options.minSpacingMs - nowMs);
    return Math.max(delayMs, spacingMs);
  }
}

const DECAY_MS = 1_000;
