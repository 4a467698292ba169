import { traceOf } from "../../domain/trace-context.js";
import type { FiringPollDeps } from "./firing-poll-deps.js";
import { publishClaimed } from "./publish-claimed.js";
import { timerKeyString, type TimerKey } from "../../domain/timer.js";
import { decideFiring, type FiringDecision } from "../../domain/firing-rules.js";
import type { RecurrenceCalendar } from "../../domain/recurrence.js";
import type { TimerEventPublisher } from "../timer-event-publisher.js";
import type { DueCursor, DueTimer } from "../timer-store.js";
import { advanceDueCursor } from "./fair-due-selection.js";
import { mapInSlices } from "../in-slices.js";
import { BudgetedCalendar, CatchUpTooLong } from "./budgeted-calendar.js";
import type { CatchUpCalculator } from "./catch-up-calculator.js";
import { CatchUpLanes } from "./catch-up-lanes.js";
import { firingHistory } from "./firing-history.js";

/** What a poll read: whether the batch was full, and the chain's cursor after its timers. */
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
  /**
   * Published timers whose firing was recorded (Reached, Missed, or on to the next occurrence);
   * fewer than published when a reschedule landed meanwhile.
   */
  readonly marked: number;
  /** The query returned a full batch: more may be due right now. */
  readonly full: boolean;
}

export interface DueTimerPollDeps extends FiringPollDeps {
  /** Next occurrences of cron rules. */
  readonly calendar: RecurrenceCalendar;
  /** Decides the firings whose catch-up takes more than `CATCH_UP_STEPS_IN_POLL` calendar steps. */
  readonly catchUps: CatchUpCalculator;
  /** A tenant's long catch-ups are done: its later due timers can be polled again. */
  readonly onCatchUpsDone?: () => void;
  /** Told the completion time-out of a timer that became `Fired` (CONTRACT §11). */
  readonly onTracked?: (deadlineAtMs: number) => void;
}

/** A due timer and what firing it produces. */
interface DueFiring {
  readonly timer: DueTimer;
  readonly firing: FiringDecision;
}

/**
 * Calendar steps a firing may take inside a poll: a recurring timer a few occurrences behind
 * catches up there. One with a longer catch-up (a cron rule in a zone with DST changes, due since
 * long ago: about a thousand steps) goes to its tenant's catch-up lane, and so do that tenant's
 * later due timers, so that the poll fires everybody else's timers meanwhile (CONTRACT §10, §12).
 */
const CATCH_UP_STEPS_IN_POLL = 32;
/** Timers one tenant's catch-up lane holds: its group fires well within a claim's time to live. */
const CATCH_UP_LANE_CAPACITY = 100;

/**
 * One poll of the due-timer worker: claim due timers (fairly across tenants, each tenant's oldest
 * first: fair-due-selection.ts), decide for each what firing it
 * produces (`decideFiring`: `DueTimeReached`, `DueTimeMissed` when too late, nothing when a prefix
 * cancel covers it), publish the events (publish acks awaited, all in flight at once), then record
 * what became of the timers (Reached, Missed, Cancelled, or the next occurrence) in one transaction.
 * Publishing before recording makes delivery at-least-once: a crash in between republishes
 * (after the claim expires, from any instance), and the event stream drops the duplicate by its
 * `Nats-Msg-Id`. Claims of timers whose publish failed are released, so the retry need not wait
 * for them to expire.
 */
export class DueTimerPoll {
  readonly #budget: BudgetedCalendar;
  readonly #lanes: CatchUpLanes;

  constructor(private readonly deps: DueTimerPollDeps) {
    this.#budget = new BudgetedCalendar(deps.calendar, CATCH_UP_STEPS_IN_POLL);
    this.#lanes = new CatchUpLanes({
      capacity: CATCH_UP_LANE_CAPACITY,
      fire: (timers) => this.fireCatchUps(timers),
      onDrained: () => deps.onCatchUpsDone?.(),
      logger: deps.logger,
    });
  }

  /** Timers waiting in tenants' catch-up lanes. */
  get catchUpsInProgress(): number {
    return this.#lanes.size;
  }

  /** Stops taking timers into catch-up lanes and waits for the groups being fired. */
  stopCatchUps(): Promise<void> {
    return this.#lanes.stop();
  }

  /** One poll; resolves when its publishes and marks are done. */
  poll(after?: DueCursor): Promise<PollReport> {
    return this.startPoll(after).done;
  }

  /**
   * Starts one poll. `read` resolves as soon as the due timers are read — with the chain's cursor
   * after them, so that the next poll can start while this one's publishes are still in flight —,
   * `published` once every publish is acked or failed (never rejects), and `done` once the timers
   * are published and marked.
   */
  startPoll(after?: DueCursor): {
    readonly read: Promise<PollRead>;
    readonly published: Promise<void>;
    readonly done: Promise<PollReport>;
  } {
    const { store, clock, batchSize, owner, claimTtlMs } = this.deps;
    const startedAt = performance.now();
    const nowMs = clock.now();
    // Tenants with a catch-up lane are read from after what their lane holds.
    const lanes = this.#lanes.positions();
    const from = lanes === undefined ? after : new Map([...(after ?? []), ...lanes]);
    const due = store.claimDue({
      nowMs,
      limit: batchSize,
      owner,
      leaseUntilMs: nowMs + claimTtlMs,
      ...(from === undefined ? {} : { after: from }),
    });
    const read = due.then((timers): PollRead => ({ full: timers.length === batchSize, last: advanceDueCursor(from, timers) }));
    let onPublished!: () => void;
    const published = new Promise<void>((resolve) => (onPublished = resolve));
    const done = due.then((timers) => this.publishAndMark(timers, nowMs, startedAt, onPublished));
    // Never rejects: a failure surfaces through `done`.
    done.finally(onPublished).catch(() => undefined);
    // A failed read surfaces through both promises; callers may await only one of them.
    read.catch(() => undefined);
    return { read, published, done };
  }

  private async publishAndMark(
    claimed: readonly DueTimer[],
    nowMs: number,
    startedAt: number,
    onPublished: () => void,
  ): Promise<PollReport> {
    const { clock, metrics, batchSize } = this.deps;
    const lanes = this.#lanes;
    const due = lanes.size === 0 ? claimed : claimed.filter((timer) => !lanes.holds(timer));
    const decided = await mapInSlices(due, DECISION_SLICE_MS, (timer): DueFiring | undefined => {
      // Behind a catch-up of its tenant, a timer waits its turn in the tenant's lane (oldest first).
      if (lanes.busy(timer.tenantId)) {
        lanes.add(timer);
        return undefined;
      }
      const firing = this.decideInPoll(timer, nowMs);
      if (firing === undefined) lanes.add(timer);
      return firing === undefined ? undefined : { timer, firing };
    });
    const fired = decided.filter((f): f is DueFiring => f !== undefined);
    const { published, failed, marked } = await this.publishAndRecord(fired, nowMs, onPublished);
    metrics.pollCompleted((performance.now() - startedAt) / 1000, clock.now());
    return { found: due.length, published, failed, marked, full: claimed.length === batchSize };
  }

  /** What firing `timer` produces, or undefined when its catch-up is too long for a poll. */
  private decideInPoll(timer: DueTimer, nowMs: number): FiringDecision | undefined {
    try {
      return decideFiring(timer, nowMs, this.#budget.fresh(), timer.prefixCancelTs);
    } catch (error) {
      if (error instanceof CatchUpTooLong) return undefined;
      throw error;
    }
  }

  /**
   * Fires one group of a tenant's catch-up lane, in order: each long catch-up decided by the
   * catch-up calculator, the others here, each at the time it is decided.
   */
  private async fireCatchUps(timers: readonly DueTimer[]): Promise<void> {
    const { clock, logger, catchUps } = this.deps;
    const fired: DueFiring[] = [];
    for (const timer of timers) {
      const nowMs = clock.now();
      try {
        const firing = this.decideInPoll(timer, nowMs) ?? (await catchUps.decide(timer, nowMs, timer.prefixCancelTs));
        fired.push({ timer, firing });
      } catch (error) {
        // Left Scheduled: a later poll tries it again.
        logger.error({ err: error, tenantId: timer.tenantId, serviceCallId: timer.serviceCallId }, "catch-up of a recurring timer failed");
      }
    }
    await this.publishAndRecord(fired, clock.now());
  }

  /**
   * Publishes the events of `fired`, then records what became of the timers, in one transaction.
   * `onPublished` is told once every publish is acked or failed, before the record.
   */
  private async publishAndRecord(
    fired: readonly DueFiring[],
    nowMs: number,
    onPublished?: () => void,
  ): Promise<{ readonly published: number; readonly failed: number; readonly marked: number }> {
    const { store, metrics, owner } = this.deps;
    const toPublish = fired.filter((f) => f.firing.kind !== "cancelled");
    const { published, failed } = await publishClaimed(
      toPublish,
      (fired) => this.publishOne(this.deps.publisher, fired, nowMs),
      this.deps,
      "publishing due events failed; the timers stay Scheduled and are retried",
    );
    onPublished?.();
    // A timer a prefix cancel covers is recorded Cancelled without an event.
    const toRecord = fired.length === toPublish.length ? published : [...published, ...fired.filter((f) => f.firing.kind === "cancelled")];
    let marked = 0;
    if (toRecord.length > 0) {
      const keep = this.deps.historyEntries ?? 0;
      const recordedKeys = await store.recordFirings(
        toRecord.map(({ timer, firing }) => ({
          tenantId: timer.tenantId,
          serviceCallId: timer.serviceCallId,
          dueAtMs: timer.dueAtMs,
          generation: timer.generation,
          next: firing.next,
          ...(keep > 0 ? { history: firingHistory(timer, firing, nowMs, keep) } : {}),
        })),
        owner,
      );
      const recorded = recordedKeys.length === toRecord.length ? toRecord : onlyRecorded(toRecord, recordedKeys);
      const lags: number[] = [];
      let missed = 0;
      let ended = 0;
      for (const { firing } of recorded) {
        if (firing.kind === "reached") lags.push(firing.lateMs / 1000);
        else if (firing.kind === "missed") missed++;
        if (firing.next.state !== "Scheduled") ended++;
        if (firing.next.tracking !== undefined) this.deps.onTracked?.(firing.next.tracking.deadlineAtMs);
      }
      marked = lags.length + missed;
      if (lags.length > 0) metrics.timersFired(lags);
      if (missed > 0) metrics.timersMissed(missed);
      if (ended > 0) metrics.addPending(-ended);
    }
    return { published: published.length, failed, marked };
  }

  private publishOne(publisher: TimerEventPublisher, { timer, firing }: DueFiring, pollNowMs: number): Promise<void> {
    // A firing decided in a catch-up lane carries its own time.
    const nowMs = firing.next.reachedAtMs ?? pollNowMs;
    const { tenantId, serviceCallId, generation, data, correlationId } = timer;
    const occurrence = firing.occurrence === null ? {} : { occurrence: firing.occurrence };
    if (firing.kind === "missed") {
      return publisher.publishDueTimeMissed({
        tenantId,
        serviceCallId,
        dueAtMs: firing.dueAtMs,
        missedAtMs: nowMs,
        generation,
        data,
        correlationId,
        ...occurrence,
        trace: traceOf(timer),
      });
    }
    return publisher.publishDueTimeReached({
      tenantId,
      serviceCallId,
      dueAtMs: firing.dueAtMs,
      reachedAtMs: nowMs,
      generation,
      data,
      correlationId,
      ...occurrence,
      ...(firing.missedOccurrences === 0 ? {} : { missedOccurrences: firing.missedOccurrences }),
      ...(firing.missedOccurrencesCapped ? { missedOccurrencesCapped: true } : {}),
      ...(firing.next.tracking === undefined ? {} : { attempt: firing.next.tracking.attempt }),
      trace: traceOf(timer),
    });
  }
}

/**
 * Long enough to decide a batch of ordinary timers at once; a recurring timer's catch-up after long
 * downtime can take tens of milliseconds, and a batch of those must not hold the event loop.
 */
const DECISION_SLICE_MS = 20;

function onlyRecorded(fired: readonly DueFiring[], recordedKeys: readonly TimerKey[]): DueFiring[] {
  const recorded = new Set(recordedKeys.map(timerKeyString));
  return fired.filter((f) => recorded.has(timerKeyString(f.timer)));
}
