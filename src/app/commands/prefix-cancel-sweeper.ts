import { scheduledDelta } from "../../domain/command-rules.js";
import type { Clock } from "../clock.js";
import type { Logger } from "../logger.js";
import type { TimerMetrics } from "../timer-metrics.js";
import type { PrefixCancelSweep, TimerStore } from "../timer-store.js";
import { nextTurn } from "../in-slices.js";
import { PollingLoop } from "../polling-loop.js";

export interface PrefixCancelSweeperDeps {
  readonly store: TimerStore;
  readonly clock: Clock;
  readonly metrics: TimerMetrics;
  readonly logger: Logger;
  /** Timers per transaction; small enough that firing and commands are never held up for long. */
  readonly batchSize: number;
  /**
   * How often to look for prefix cancels recorded elsewhere (another instance on a shared store)
   * while idle; `wake` starts at once for this instance's own.
   */
  readonly idleCheckMs: number;
  /** TIMER_HISTORY_ENTRIES (CONTRACT §19): each timer cancelled gains an entry; 0 or absent: none. */
  readonly historyEntries?: number;
}

const FAILURE_BACKOFF_MS = 1_000;

/** What one sweep round did. */
export interface SweepReport {
  /** Timers whose decision changed them (Cancelled, or commandTs moved). */
  readonly changed: number;
  /** Prefix cancels still unfinished after the round. */
  readonly unfinished: number;
}

/**
 * Applies recorded `CancelTimersByPrefix` commands to the matching timers in the background
 * (CONTRACT §10), one bounded transaction at a time, round-robin over the unfinished prefix cancels,
 * yielding to the event loop between transactions so that firing and command handling go on. The
 * progress is stored with each batch, so a restart resumes where it stopped. Until the sweep reaches
 * a timer, the command rules and the firing rule treat it as cancelled already (the store reports
 * the matching prefix cancel with it), so the sweep only makes that durable in the rows.
 */
export class PrefixCancelSweeper extends PollingLoop {
  constructor(private readonly deps: PrefixCancelSweeperDeps) {
    super(deps.clock, deps.idleCheckMs);
  }

  /** One batch for each unfinished prefix cancel. */
  async sweepRound(): Promise<SweepReport> {
    const { store, clock, metrics, batchSize } = this.deps;
    const unfinished = await store.unfinishedPrefixCancels();
    let changed = 0;
    let left = 0;
    for (const cancel of unfinished) {
      if (this.stopped) return { changed, unfinished: unfinished.length };
      const { decisions, done } = await store.sweepPrefixCancel(cancel, batchSize, clock.now(), this.deps.historyEntries ?? 0);
      let delta = 0;
      for (const decision of decisions) {
        if (decision.next !== undefined) changed++;
        delta += scheduledDelta(decision);
      }
      if (delta !== 0) metrics.addPending(delta);
      if (!done) left++;
      else this.#logDone(cancel);
      await nextTurn();
    }
    return { changed, unfinished: left };
  }

  /** Sweeps until no prefix cancel is unfinished (tests, and the bench). */
  async sweepAll(): Promise<number> {
    let changed = 0;
    for (;;) {
      const report = await this.sweepRound();
      changed += report.changed;
      if (report.unfinished === 0) return changed;
    }
  }

  /** One round; at once again while prefix cancels are unfinished, else after the idle check time. */
  protected async cycle(): Promise<number> {
    try {
      const report = await this.sweepRound();
      return report.unfinished > 0 ? 0 : this.deps.idleCheckMs;
    } catch (error) {
      this.deps.logger.error({ err: error }, "prefix cancel sweep failed; retrying");
      return FAILURE_BACKOFF_MS;
    }
  }

  #logDone(cancel: PrefixCancelSweep): void {
    this.deps.logger.info(
      { tenantId: cancel.tenantId, serviceCallIdPrefix: cancel.serviceCallIdPrefix, commandTs: cancel.commandTs },
      "prefix cancel applied to every matching timer",
    );
  }
}
