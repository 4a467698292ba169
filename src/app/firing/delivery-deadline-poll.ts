import { traceOf } from "../../domain/trace-context.js";
import type { FiringPollDeps } from "./firing-poll-deps.js";
import { publishClaimed } from "./publish-claimed.js";
import { timerKeyString } from "../../domain/timer.js";
import { decideDeadline, type DeadlineDecision, type DeadlineTimer } from "../../domain/delivery-rules.js";
import { deadlineHistory } from "./firing-history.js";

/** What one deadline poll did. */
export interface DeadlinePollReport {
  /** Fired timers whose deadline had passed. */
  readonly found: number;
  /** Retries published and recorded. */
  readonly retried: number;
  /** Completion time-outs counted (retry waiting, or TimedOut). */
  readonly timeouts: number;
  readonly publishFailed: number;
  /** The query returned a full batch: more may be waiting right now. */
  readonly full: boolean;
}

export type DeliveryDeadlinePollDeps = FiringPollDeps;

interface Passed {
  readonly timer: DeadlineTimer;
  readonly decision: DeadlineDecision;
}

/**
 * One poll of the completion-tracking deadlines (CONTRACT §11): claims `Fired` timers whose deadline
 * passed (through the deadline index, like due claims), publishes the retries that were waiting
 * (publish first, then record: a crash in between republishes the same attempt, which the events
 * stream drops by its `Nats-Msg-Id`), and records the completion time-outs (a retry then waits
 * its backoff, or the timer ends `TimedOut`).
 */
export class DeliveryDeadlinePoll {
  constructor(private readonly deps: DeliveryDeadlinePollDeps) {}

  async poll(): Promise<DeadlinePollReport> {
    const { store, clock, batchSize, owner, claimTtlMs, metrics } = this.deps;
    const nowMs = clock.now();
    const timers = await store.claimDeadlines({ nowMs, limit: batchSize, owner, leaseUntilMs: nowMs + claimTtlMs });
    const passed = timers.map((timer): Passed => ({ timer, decision: decideDeadline(timer, nowMs) }));
    const retries = passed.filter((p) => p.decision.kind === "retry");
    const { published } = await publishClaimed(
      retries,
      ({ timer, decision }) =>
        this.deps.publisher.publishDueTimeReached({
          tenantId: timer.tenantId,
          serviceCallId: timer.serviceCallId,
          dueAtMs: timer.dueAtMs!,
          reachedAtMs: nowMs,
          generation: timer.generation,
          data: timer.data,
          correlationId: timer.correlationId,
          attempt: decision.next.attempt,
          trace: traceOf(timer),
        }),
      this.deps,
      "publishing delivery retries failed; they are retried",
    );
    const toRecord = [...published, ...passed.filter((p) => p.decision.kind !== "retry")];
    let retried = 0;
    let timeouts = 0;
    if (toRecord.length > 0) {
      const keep = this.deps.historyEntries ?? 0;
      const recordedKeys = await store.recordDeadlines(
        toRecord.map(({ timer, decision }) => ({
          tenantId: timer.tenantId,
          serviceCallId: timer.serviceCallId,
          attempt: timer.attempt,
          deadlineAtMs: timer.deadlineAtMs,
          next: decision.next,
          ...(keep > 0 ? { history: deadlineHistory(timer, decision, nowMs, keep) } : {}),
        })),
        owner,
      );
      const recorded = new Set(recordedKeys.map(timerKeyString));
      let timedOut = 0;
      for (const { timer, decision } of toRecord) {
        if (!recorded.has(timerKeyString(timer))) continue;
        if (decision.kind === "retry") retried++;
        else timeouts++;
        if (decision.kind === "timedOut") timedOut++;
      }
      if (retried > 0) metrics.deliveriesCounted("retried", retried);
      if (timedOut > 0) metrics.deliveriesCounted("timed_out", timedOut);
    }
    return { found: timers.length, retried, timeouts, publishFailed: retries.length - published.length, full: timers.length === batchSize };
  }
}
