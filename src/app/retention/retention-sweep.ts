import { retentionCutoffMs } from "../../domain/retention.js";
import type { Clock } from "../clock.js";
import type { TimerRetention } from "./timer-retention.js";
import { nextTurn } from "../in-slices.js";

/** `timer_schedules_deleted_total` (CONTRACT §8). */
export interface RetentionMetrics {
  timersDeleted(count: number): void;
}

export interface RetentionSweepDeps {
  readonly retention: TimerRetention;
  readonly clock: Clock;
  readonly metrics: RetentionMetrics;
  /** TIMER_RETENTION_HOURS in ms; 0 keeps everything. */
  readonly retentionMs: number;
  /** Rows per delete transaction. */
  readonly batchSize?: number;
  /** Batches per sweep at most: a sweep ends (and reports `more`) after this many. */
  readonly maxBatches?: number;
  /** Gives the event loop back between batches, so firing and commands run in between. */
  readonly pause?: () => Promise<void>;
}

/** What one sweep did. `more`: it stopped at `maxBatches` with rows left to delete. */
export interface SweepReport {
  readonly timersDeleted: number;
  readonly prefixCancelsDeleted: number;
  readonly more: boolean;
}

export const RETENTION_BATCH_SIZE = 500;
const MAX_BATCHES_PER_SWEEP = 200;

/**
 * One retention sweep: deletes final timers, then prefix cancels, changed before now − retention,
 * in batches of `batchSize` rows (each its own short transaction), pausing between batches. The
 * cutoff is fixed at the start of the sweep.
 */
export async function sweepRetention(deps: RetentionSweepDeps): Promise<SweepReport> {
  const cutoff = retentionCutoffMs(deps.clock.now(), deps.retentionMs);
  if (cutoff === undefined) return { timersDeleted: 0, prefixCancelsDeleted: 0, more: false };
  const batchSize = deps.batchSize ?? RETENTION_BATCH_SIZE;
  const pause = deps.pause ?? nextTurn;
  let budget = deps.maxBatches ?? MAX_BATCHES_PER_SWEEP;
  let timersDeleted = 0;
  let prefixCancelsDeleted = 0;
  for (;;) {
    if (budget-- <= 0) return { timersDeleted, prefixCancelsDeleted, more: true };
    const deleted = await deps.retention.deleteFinalTimers(cutoff, batchSize);
    timersDeleted += deleted;
    if (deleted > 0) deps.metrics.timersDeleted(deleted);
    if (deleted < batchSize) break;
    await pause();
  }
  for (;;) {
    if (budget-- <= 0) return { timersDeleted, prefixCancelsDeleted, more: true };
    const deleted = await deps.retention.deletePrefixCancels(cutoff, batchSize);
    prefixCancelsDeleted += deleted;
    if (deleted < batchSize) break;
    await pause();
  }
  return { timersDeleted, prefixCancelsDeleted, more: false };
}
