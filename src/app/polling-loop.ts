import type { Clock } from "./clock.js";
import { WakeableSleep } from "./wakeable-sleep.js";

/**
 * The life of a firing loop: run a cycle (its polls), sleep the delay the cycle returns — cut short
 * by `wake`, never longer than `maxSleepMs`, never below 0 — and repeat until stopped. A subclass
 * supplies the cycle, which handles its own errors; the loop itself never dies.
 */
export abstract class PollingLoop {
  private running: Promise<void> | undefined;
  private stopping = false;
  /** Runs started so far: a run that is not the latest ends after its cycle. */
  private runs = 0;
  private readonly sleeper: WakeableSleep;

  /** `holdsProcess` false: the loop's sleeps do not keep the process alive (a watch, a gauge). */
  constructor(clock: Clock, maxSleepMs: number, options?: { readonly holdsProcess?: boolean }) {
    this.sleeper = new WakeableSleep(clock, maxSleepMs, options?.holdsProcess ?? true);
  }

  /** Called as a run begins (at a start, once an earlier run has ended). */
  protected beginRun(): void {}

  /** One round of polls; resolves to the delay before the next. */
  protected abstract cycle(): Promise<number>;

  /** True from `stop` on: a cycle in hand ends as soon as it can. */
  get stopped(): boolean {
    return this.stopping;
  }

  /** Starts the loop; during a `stop` still ending, the new run begins once the old one has ended. */
  start(): void {
    if (this.running !== undefined && !this.stopping) return;
    const previous = this.running;
    this.stopping = false;
    const run = ++this.runs;
    this.running = previous === undefined ? this.run(run) : previous.then(() => this.run(run));
  }

  /** Stops after the cycle in hand (its publishes and marks complete). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.sleeper.interrupt();
    const running = this.running;
    await running;
    // A start meanwhile owns the loop now.
    if (this.running === running) this.running = undefined;
  }

  /** Work is due at `atMs` (at once, when omitted): wake no later than then. */
  wake(atMs: number = Number.NEGATIVE_INFINITY): void {
    this.sleeper.wake(atMs);
  }

  /** Cycles until stopped, or until a later start took over (`run` is no longer the latest). */
  private async run(run: number): Promise<void> {
    const current = () => !this.stopping && run === this.runs;
    if (current()) this.beginRun();
    while (current()) {
      this.sleeper.beginCycle();
      const delayMs = await this.cycle();
      if (!current()) break;
      await this.sleeper.sleep(delayMs);
    }
  }
}
