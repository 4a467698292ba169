import { doublingBackoffMs } from "../doubling-backoff.js";
import type { Logger } from "../logger.js";
import { sweepRetention, type RetentionSweepDeps, type SweepReport } from "./retention-sweep.js";
import { PollingLoop } from "../polling-loop.js";

export interface RetentionLoopDeps extends RetentionSweepDeps {
  readonly logger: Logger;
  /** Between sweeps that found nothing more to delete. */
  readonly intervalMs?: number;
}

/** Once a minute: rows become deletable one retention window after their last change, no hurry. */
export const RETENTION_INTERVAL_MS = 60_000;
/** After a sweep that stopped at its batch budget: go on soon, still leaving room to the rest. */
const CONTINUE_AFTER_MS = 100;
const FAILURE_BACKOFF_BASE_MS = 1_000;
/**
 * Between two delete batches. A batch of 500 takes a few ms of the only thread; without a pause a
 * sweep over a large backlog took most of it (fire lag p99 ×5 in the retentionSweep bench).
 * At most ~10,000 rows/s: a backlog of 1M old rows is gone in a few minutes.
 */
const BATCH_PAUSE_MS = 50;

/**
 * Runs retention sweeps for as long as the service runs (not at all with retention 0). Errors are
 * logged and retried with backoff; the loop never dies.
 */
export class RetentionLoop extends PollingLoop {
  #failures = 0;

  constructor(private readonly deps: RetentionLoopDeps) {
    super(deps.clock, deps.intervalMs ?? RETENTION_INTERVAL_MS);
  }

  override start(): void {
    if (this.deps.retentionMs > 0) super.start();
  }

  /** One sweep; resolves to the delay before the next. */
  protected async cycle(): Promise<number> {
    const { logger, intervalMs = RETENTION_INTERVAL_MS } = this.deps;
    let report: SweepReport;
    try {
      report = await sweepRetention({ ...this.deps, pause: this.deps.pause ?? (() => this.#pause()) });
    } catch (error) {
      if (error instanceof RetentionStopped) return 0;
      this.#failures++;
      logger.error({ err: error, consecutiveFailures: this.#failures }, "retention sweep failed");
      return doublingBackoffMs(this.#failures, FAILURE_BACKOFF_BASE_MS, intervalMs);
    }
    this.#failures = 0;
    if (report.timersDeleted > 0 || report.prefixCancelsDeleted > 0) {
      logger.info(
        { timersDeleted: report.timersDeleted, prefixCancelsDeleted: report.prefixCancelsDeleted, more: report.more },
        "retention sweep deleted old rows",
      );
    }
    return report.more ? CONTINUE_AFTER_MS : intervalMs;
  }

  /** Between batches: BATCH_PAUSE_MS for firing and commands, and none at all once stopping (the sweep ends soon). */
  async #pause(): Promise<void> {
    if (this.stopped) throw new RetentionStopped();
    await new Promise<void>((resolve) => setTimeout(resolve, BATCH_PAUSE_MS).unref());
    if (this.stopped) throw new RetentionStopped();
  }
}

/** The loop was stopped between two batches. */
class RetentionStopped extends Error {
  override readonly name = "RetentionStopped";
}
