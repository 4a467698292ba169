import type { Clock } from "../clock.js";
import type { Logger } from "../logger.js";
import type { TimerStore } from "../timer-store.js";
import type { DeliveryDeadlinePoll } from "./delivery-deadline-poll.js";
import { failedPollBackoffMs } from "./failure-backoff.js";
import { PollingLoop } from "../polling-loop.js";

export interface DeliveryDeadlineLoopDeps {
  readonly worker: DeliveryDeadlinePoll;
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
export class DeliveryDeadlineLoop extends PollingLoop {
  private failures = 0;

  constructor(private readonly deps: DeliveryDeadlineLoopDeps) {
    super(deps.clock, deps.pollingIntervalMs);
  }

  /** One cycle: polls while they come back full, then the sleep until the earliest deadline. */
  protected async cycle(): Promise<number> {
    const { worker, store, clock, logger, pollingIntervalMs } = this.deps;
    let delayMs = pollingIntervalMs;
    try {
      let report;
      do report = await worker.poll();
      while (report.full && !this.stopped);
      this.failures = report.publishFailed > 0 ? this.failures + 1 : 0;
      if (this.failures === 0) {
        const next = await store.nextDeadlineAt();
        // The sleep caps this at the polling interval and at 0.
        if (next !== null) delayMs = next - clock.now();
      }
    } catch (error) {
      this.failures++;
      logger.error({ err: error, consecutiveFailures: this.failures }, "delivery deadline poll failed");
    }
    return this.failures > 0 ? failedPollBackoffMs(this.failures, pollingIntervalMs) : delayMs;
  }
}
