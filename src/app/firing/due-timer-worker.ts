import { timerKeyString } from "../../domain/timer.js";
import type { Clock } from "../clock.js";
import type { Logger } from "../logger.js";
import type { TimerEventPublisher } from "../timer-event-publisher.js";
import type { TimerMetrics } from "../timer-metrics.js";
import type { DueCursor, DueTimer, TimerStore } from "../timer-store.js";

/** What a poll read: whether the batch was full, and the position after its last timer. */
export interface PollRead {
  readonly full: boolean;
  readonly last: DueCursor | undefined;
}

/** What one poll did. */
export interface PollReport {
  /** Due timers the query returned. */
  readonly found: number;
  readonly published: number;
  readonly failed: number;
  /** Published timers marked `Reached` (fewer than published when a reschedule landed meanwhile). */
  readonly marked: number;
  /** The query returned a full batch: more may be due right now. */
  readonly full: boolean;
}

export interface DueTimerWorkerDeps {
  readonly store: TimerStore;
  readonly publisher: TimerEventPublisher;
  readonly clock: Clock;
  readonly metrics: TimerMetrics;
  readonly logger: Logger;
  readonly batchSize: number;
  /** This instance, as the owner of its claims on due timers. */
  readonly owner: string;
  /** How long a claim holds: longer than a poll's publish and mark can take (CONTRACT §6). */
  readonly claimTtlMs: number;
}

/**
 * One poll of the due-timer worker: claim due timers oldest first, publish a `DueTimeReached` for
 * each (publish acks awaited, all in flight at once), then mark the published ones `Reached` in one
 * transaction. Publishing before marking makes delivery at-least-once: a crash in between republishes
 * (after the claim expires, from any instance), and the event stream drops the duplicate by its
 * `Nats-Msg-Id`. Claims of timers whose publish failed are released, so the retry need not wait
 * for them to expire.
 */
export class DueTimerWorker {
  constructor(private readonly deps: DueTimerWorkerDeps) {}

  /** One poll; resolves when its publishes and marks are done. */
  poll(after?: DueCursor): Promise<PollReport> {
    return this.startPoll(after).done;
  }

  /**
   * Starts one poll. `read` resolves as soon as the due timers are read — with the position after
   * the last one, so that the next poll can start while this one's publishes are still in flight —
   * and `done` once they are published and marked.
   */
  startPoll(after?: DueCursor): { readonly read: Promise<PollRead>; readonly done: Promise<PollReport> } {
    const { store, clock, batchSize, owner, claimTtlMs } = this.deps;
    const startedAt = performance.now();
    const nowMs = clock.now();
    const due = store.claimDue({ nowMs, limit: batchSize, owner, leaseUntilMs: nowMs + claimTtlMs, ...(after === undefined ? {} : { after }) });
    const read = due.then((timers): PollRead => {
      const last = timers[timers.length - 1];
      return {
        full: timers.length === batchSize,
        last: last === undefined ? after : { dueAtMs: last.dueAtMs, tenantId: last.tenantId, serviceCallId: last.serviceCallId },
      };
    });
    const done = due.then((timers) => this.publishAndMark(timers, nowMs, startedAt));
    // A failed read surfaces through both promises; callers may await only one of them.
    read.catch(() => undefined);
    done.catch(() => undefined);
    return { read, done };
  }

  private async publishAndMark(due: readonly DueTimer[], nowMs: number, startedAt: number): Promise<PollReport> {
    const { store, clock, metrics, batchSize, owner } = this.deps;
    const { published, failed } = await this.publish(due, nowMs);
    if (failed > 0) await this.releaseUnpublished(due, published);
    let marked = 0;
    if (published.length > 0) {
      const markedKeys = await store.markReached(published, nowMs, owner);
      marked = markedKeys.length;
      if (marked > 0) {
        const lags = marked === published.length ? published.map((t) => (nowMs - t.dueAtMs) / 1000) : lagsOfMarked(published, markedKeys, nowMs);
        metrics.timersFired(lags);
        metrics.addPending(-marked);
      }
    }
    metrics.pollCompleted((performance.now() - startedAt) / 1000, clock.now());
    return { found: due.length, published: published.length, failed, marked, full: due.length === batchSize };
  }

  private async publish(due: readonly DueTimer[], reachedAtMs: number): Promise<{ published: DueTimer[]; failed: number }> {
    const { publisher, metrics, logger } = this.deps;
    const results = await Promise.allSettled(
      due.map((timer) =>
        publisher.publishDueTimeReached({
          tenantId: timer.tenantId,
          serviceCallId: timer.serviceCallId,
          dueAtMs: timer.dueAtMs,
          reachedAtMs,
          generation: timer.generation,
          data: timer.data,
          correlationId: timer.correlationId,
        }),
      ),
    );
    const published: DueTimer[] = [];
    let failed = 0;
    let firstError: unknown;
    results.forEach((result, i) => {
      if (result.status === "fulfilled") published.push(due[i]!);
      else {
        failed++;
        firstError ??= result.reason;
      }
    });
    if (failed > 0) {
      metrics.publishFailed(failed);
      logger.warn({ err: firstError, failed, of: due.length }, "publishing DueTimeReached failed; the timers stay Scheduled and are retried");
    }
    return { published, failed };
  }

  private async releaseUnpublished(due: readonly DueTimer[], published: readonly DueTimer[]): Promise<void> {
    const sent = new Set(published);
    const unpublished = due.filter((timer) => !sent.has(timer));
    try {
      await this.deps.store.releaseClaims(this.deps.owner, unpublished);
    } catch (error) {
      // The claims expire by themselves; the retry only comes later.
      this.deps.logger.warn({ err: error, timers: unpublished.length }, "releasing claims after a failed publish failed");
    }
  }
}

function lagsOfMarked(published: readonly DueTimer[], markedKeys: readonly { tenantId: string; serviceCallId: string }[], nowMs: number): number[] {
  const marked = new Set(markedKeys.map(timerKeyString));
  return published.filter((t) => marked.has(timerKeyString(t))).map((t) => (nowMs - t.dueAtMs) / 1000);
}
