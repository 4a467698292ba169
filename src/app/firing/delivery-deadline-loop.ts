import type { Clock } from "../clock.js";
import type { Logger } from "../logger.js";
import type { TimerStore } from "../timer-store.js";
import type { DeliveryDeadlineWorker } from "./delivery-deadline-worker.js";

export interface DeliveryDeadlineLoopDeps {
  readonly worker: DeliveryDeadlineWorker;
  readonly store: TimerStore;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The longest the loop sleeps. */
  readonly pollingIntervalMs: number;
}

const FAILURE_BACKOFF_BASE_MS = 100;

/**
 * Runs the deadline polls (CONTRACT §11): polls while batches come back full, then sleeps until the
 * earliest deadline (never longer than the polling interval). `wake` cuts a sleep short when a
 * report or a first publish set an earlier deadline. Errors are logged and retried with backoff.
 */
export class DeliveryDeadlineLoop {
  private running: Promise<void> | undefined;
  private stopped = false;
  private sleepTimer: NodeJS.Timeout | undefined;
  private endSleep: (() => void) | undefined;
  private wakeAtMs = Number.POSITIVE_INFINITY;
  private wakeRequestMs = Number.POSITIVE_INFINITY;
  private failures = 0;

  constructor(private readonly deps: DeliveryDeadlineLoopDeps) {}

  start(): void {
    if (this.running !== undefined) return;
    this.stopped = false;
    this.running = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.sleepTimer !== undefined) clearTimeout(this.sleepTimer);
    this.endSleep?.();
    await this.running;
    this.running = undefined;
  }

  /** A deadline at `atMs` was set: look no later than then. */
  wake(atMs: number = Number.NEGATIVE_INFINITY): void {
    if (this.endSleep === undefined) {
      if (atMs < this.wakeRequestMs) this.wakeRequestMs = atMs;
      return;
    }
    if (atMs >= this.wakeAtMs) return;
    this.sleep(Math.min(this.deps.pollingIntervalMs, Math.max(0, atMs - this.deps.clock.now())));
  }

  private async run(): Promise<void> {
    const { worker, store, clock, logger, pollingIntervalMs } = this.deps;
    while (!this.stopped) {
      this.wakeRequestMs = Number.POSITIVE_INFINITY;
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
      if (this.failures > 0) delayMs = Math.min(pollingIntervalMs, FAILURE_BACKOFF_BASE_MS * 2 ** Math.min(this.failures - 1, 16));
      if (this.stopped) break;
      delayMs = Math.max(0, Math.min(delayMs, this.wakeRequestMs - clock.now()));
      await new Promise<void>((resolve) => {
        this.endSleep = resolve;
        this.sleep(delayMs);
      });
      this.endSleep = undefined;
      this.wakeAtMs = Number.POSITIVE_INFINITY;
    }
  }

  private sleep(delayMs: number): void {
    if (this.sleepTimer !== undefined) clearTimeout(this.sleepTimer);
    this.wakeAtMs = this.deps.clock.now() + delayMs;
    const endSleep = this.endSleep;
    this.sleepTimer = setTimeout(() => {
      this.sleepTimer = undefined;
      endSleep?.();
    }, delayMs);
  }
}
