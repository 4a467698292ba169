import type { Clock } from "./clock.js";

/**
 * The sleep between polls of a loop that must wake early when new work is due sooner (db-scheduler's
 * `Waiter`). Sleeps run on the monotonic clock (setTimeout); due times are wall-clock instants.
 * A `wake` that comes while the loop is not asleep is remembered and shortens the next sleep, since
 * the poll in hand may have read before that work was stored.
 */
export class WakeableSleep {
  private timer: NodeJS.Timeout | undefined;
  private endSleep: (() => void) | undefined;
  /** Wall-clock time the current sleep is meant to end; Infinity while awake. */
  private wakeAtMs = Number.POSITIVE_INFINITY;
  /** Earliest instant announced by `wake` while awake. */
  private wakeRequestMs = Number.POSITIVE_INFINITY;

  constructor(
    private readonly clock: Clock,
    /** The longest a sleep lasts, also after a wake. */
    private readonly maxMs: number,
    /** False: a sleep does not keep the process alive (a loop nothing waits on at exit). */
    private readonly holdsProcess = true,
  ) {}

  /** Work is due at `atMs` (at once, when omitted): end the sleep no later than then. */
  wake(atMs: number = Number.NEGATIVE_INFINITY): void {
    if (this.endSleep === undefined) {
      if (atMs < this.wakeRequestMs) this.wakeRequestMs = atMs;
      return;
    }
    if (atMs >= this.wakeAtMs) return;
    // Capped: after a wall-clock step back, wakeAtMs (reckoned before the step) can lie far ahead
    // of a new due time that is itself far ahead; an uncapped sleep would then stall the loop.
    this.arm(Math.min(this.maxMs, Math.max(0, atMs - this.clock.now())));
  }

  /** Forgets the wakes of the last cycle: call before a loop's polls start reading. */
  beginCycle(): void {
    this.wakeRequestMs = Number.POSITIVE_INFINITY;
  }

  /** Sleeps `delayMs`, or less when a wake asked for earlier (since beginCycle or while asleep). */
  async sleep(delayMs: number): Promise<void> {
    const ms = Math.max(0, Math.min(delayMs, this.maxMs, this.wakeRequestMs - this.clock.now()));
    await new Promise<void>((resolve) => {
      this.endSleep = resolve;
      this.arm(ms);
    });
    this.endSleep = undefined;
    this.wakeAtMs = Number.POSITIVE_INFINITY;
  }

  /** Ends a sleep in progress now (stopping the loop). */
  interrupt(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.endSleep?.();
  }

  private arm(delayMs: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.wakeAtMs = this.clock.now() + delayMs;
    const endSleep = this.endSleep;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      endSleep?.();
    }, delayMs);
    if (!this.holdsProcess) this.timer.unref();
  }
}
