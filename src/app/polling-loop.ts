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
  private readonly sleeper: WakeableSleep;

  /** `holdsProcess` false: the loop's sleeps do not keep the process alive (a watch, a gauge). */
  constructor(clock: Clock, maxSleepMs: number, options?: { readonly holdsProcess?: boolean }) {
    this.sleeper = new WakeableSleep(clock, maxSleepMs, options?.holdsProcess ?? true);
  }

  /** One round of polls; resolves to the delay before the next. */
  protected abstract cycle(): Promise<number>;

  /** True from `stop` on: a cycle in hand ends as soon as it can. */
  get stopped(): boolean {
    return this.stopping;
  }

  start(): void {
    if (this.running !== undefined) return;
    this.stopping = false;
    this.running = this.run();
  }

  /** Stops after the cycle in hand (its publishes and marks complete). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.sleeper.interrupt();
    await this.running;
    this.running = undefined;
  }

  /** Work is due at `atMs` (at once, when omitted): wake no later than then. */
  wake(atMs: number = Number.NEGATIVE_INFINITY): void {
    this.sleeper.wake(atMs);
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      this.sleeper.beginCycle();
      const delayMs = await this.cycle();
      if (this.stopping) break;
      await this.sleeper.sleep(delayMs);
    }
  }
}
