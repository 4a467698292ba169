import type { Clock } from "../clock.js";
import type { Logger } from "../logger.js";
import type { TimerStore } from "../timer-store.js";
import type { DeliveryDeadlineWorker } from "./delivery-deadline-worker.js";
import { failedPollBackoffMs } from "./failure-backoff.js";
import { WakeableSleep } from "./wakeable-sleep.js";

export interface DeliveryDeadlineLoopDeps {
  readonly worker: DeliveryDeadlineWorker;
  readonly store: TimerStore;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The longest the loop sleeps. */
  readonly pollingIntervalMs: number;
}

/**
 * Runs the deadline polls (CONTRACT §11): polls while batches come back full, then sleeps until the
 * earliest deadline (never longer than the polling interval). `wake` cuts a sleep short when a
 * report or a first publish set an earlier deadline. Errors are logged and retried with backoff.
 */
export class DeliveryDeadlineLoop {
  private running: Promise<void> | undefined;
  private stopped = false;
  private readonly sleeper: WakeableSleep;
  private failures = 0;

  constructor(private readonly deps: DeliveryDeadlineLoopDeps) {
    this.sleeper = new WakeableSleep(deps.clock, deps.pollingIntervalMs);
  }

  start(): void {
    if (this.running !== undefined) return;
    this.stopped = false;
    this.running = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.sleeper.interrupt();
    await this.running;
    this.running = undefined;
  }

  /** A deadline at `atMs` was set: look no later than then. */
  wake(atMs: number = Number.NEGATIVE_INFINITY): void {
    this.sleeper.wake(atMs);
  }

  private async run(): Promise<void> {
    const { worker, store, clock, logger, pollingIntervalMs } = this.deps;
    while (!this.stopped) {
      this.sleeper.beginCycle();
      let delayMs = pollingIntervalMs;
      try {
        let report;
        do report = await worker.poll();
        while (report.full && !this.stopped);
        this.failures = report.publishFailed > 0 ? this.failures + 1 : 0;
        if (this.failures === 0) {
          const next = await store.nextDeadlineAt();
          if (next !== null) delayMs = Math.min(pollingIntervalMs, Math.max(0, next - clock.now()));
        }
      } catch (error) {
        this.failures++;
        logger.error({ err: error, consecutiveFailures: this.failures }, "delivery deadline poll failed");
      }
      if (this.failures > 0) delayMs = failedPollBackoffMs(this.failures, pollingIntervalMs);
      if (this.stopped) break;
      await this.sleeper.sleep(delayMs);
    }
  }
}
