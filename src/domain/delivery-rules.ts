import type { TraceMembers } from "./trace-context.js";
import type { Timer, TimerKey, TimerState } from "./timer.js";
import type { ReportCommand } from "./timer-command.js";
import type { KeyDecision } from "./key-decision.js";
import type { DeliveryPolicy } from "./delivery-policy.js";

export type { DeliveryPolicy } from "./delivery-policy.js";

export const DEFAULT_BACKOFF_MS = 5_000;
export const DEFAULT_COMPLETION_TIMEOUT_MS = 300_000;
export const MAX_RETRIES_LIMIT = 100;
export const MIN_BACKOFF_MS = 100;
export const MIN_COMPLETION_TIMEOUT_MS = 1_000;
/** The reason recorded for a completion time-out. */
export const TIMEOUT_REASON = "timeout";

/** The wait after a failure of `attempt` (1, 2, …) before the next publish: `backoffMs × 2^(attempt−1)`. */
export function retryDelayMs(policy: DeliveryPolicy, attempt: number): number {
  return policy.backoffMs * 2 ** Math.max(0, attempt - 1);
}

/** Whether another publish may follow a failure of `attempt`. */
export function hasAttemptsLeft(policy: DeliveryPolicy, attempt: number): boolean {
  return attempt < policy.maxRetries + 1;
}

/** What the first publish of a tracked timer makes of it: `Fired`, waiting for a report. */
export function firstPublish(
  policy: DeliveryPolicy,
  nowMs: number,
): { readonly attempt: number; readonly firedAtMs: number; readonly deadlineAtMs: number } {
  return { attempt: 1, firedAtMs: nowMs, deadlineAtMs: nowMs + policy.completionTimeoutMs };
}

/**
 * The effect of a consumer's report (CONTRACT §11). Only a `Fired` timer with `delivery` takes
 * reports; anything else ignores them, as does a report older than the timer's last command (§3.2).
 * - `TimerCompleted` → `Completed` (final), also while a retry is waiting (the work got done late).
 * - `TimerFailed` for the publish in hand (not older than or as old as the last command applied,
 *   so a redelivered report never counts twice) → the next publish after the backoff, or `Failed`
 *   (final) when no attempts remain. While a retry is already waiting there is no publish in hand:
 *   the report is ignored.
 */
export function decideReport(current: Timer | undefined, command: ReportCommand, nowMs: number): KeyDecision {
  const ignored: KeyDecision = { outcome: "ignored", previous: current };
  if (current?.state === "Scheduled" && current.delivery && current.dueAtMs !== null && current.dueAtMs <= nowMs) {
    return { ...ignored, retryLater: true };
  }
  if (current === undefined || current.state !== "Fired" || !current.delivery) return ignored;
  if (command.timestampMs < current.commandTs) return ignored;
  if (command.kind === "complete") {
    const next: Timer = {
      ...current,
      state: "Completed",
      completedAtMs: nowMs,
      result: command.result,
      deadlineAtMs: null,
      commandTs: command.timestampMs,
      updatedAtMs: nowMs,
    };
    return { outcome: "accepted", previous: current, next };
  }
  if (command.timestampMs === current.commandTs || current.reachedAtMs === null) return ignored;
  const failure = countFailure(current, command.reason, nowMs);
  return { outcome: "accepted", previous: current, next: { ...current, ...failure, commandTs: command.timestampMs } };
}

/** A failure of the publish in hand: wait for the retry, or end `Failed` / `TimedOut`. */
function countFailure(
  timer: Timer,
  reason: string,
  nowMs: number,
): Pick<Timer, "state" | "lastReason" | "deadlineAtMs" | "reachedAtMs" | "updatedAtMs"> {
  const policy = timer.delivery!;
  const attempt = timer.attempt ?? 1;
  if (hasAttemptsLeft(policy, attempt)) {
    // No publish in hand (reachedAtMs null) until the retry goes out at the deadline.
    return {
      state: "Fired",
      lastReason: reason,
      deadlineAtMs: nowMs + retryDelayMs(policy, attempt),
      reachedAtMs: null,
      updatedAtMs: nowMs,
    };
  }
  const state: TimerState = reason === TIMEOUT_REASON ? "TimedOut" : "Failed";
  return { state, lastReason: reason, deadlineAtMs: null, reachedAtMs: timer.reachedAtMs, updatedAtMs: nowMs };
}

/** What a `Fired` timer whose deadline passed needs of it. */
export type DeadlineTimer = TimerKey &
  TraceMembers &
  Pick<Timer, "dueAtMs" | "generation" | "data" | "correlationId" | "reachedAtMs" | "updatedAtMs" | "lastReason"> & {
    readonly delivery: DeliveryPolicy;
    readonly attempt: number;
    readonly deadlineAtMs: number;
  };

/** The columns a passed deadline changes. */
export interface TimerAfterDeadline {
  readonly state: TimerState;
  readonly attempt: number;
  readonly reachedAtMs: number | null;
  readonly deadlineAtMs: number | null;
  readonly lastReason: string | null;
  readonly updatedAtMs: number;
}

/**
 * What a passed deadline of a `Fired` timer produces (CONTRACT §11):
 * - `retry`: a retry was waiting: publish attempt + 1 now, its completion time-out runs;
 * - `timeout`: no report for the publish in hand: a failure with reason `timeout`, the retry waits
 *   its backoff;
 * - `timedOut`: the same with no attempts left: `TimedOut` (final).
 */
export interface DeadlineDecision {
  readonly kind: "retry" | "timeout" | "timedOut";
  readonly next: TimerAfterDeadline;
}

/** Decides what the passed deadline of `timer` does at `nowMs`. Pure. */
export function decideDeadline(timer: DeadlineTimer, nowMs: number): DeadlineDecision {
  const { delivery, attempt } = timer;
  if (timer.reachedAtMs === null) {
    return {
      kind: "retry",
      next: {
        state: "Fired",
        attempt: attempt + 1,
        reachedAtMs: nowMs,
        deadlineAtMs: nowMs + delivery.completionTimeoutMs,
        lastReason: timer.lastReason ?? null,
        updatedAtMs: nowMs,
      },
    };
  }
  const asTimer = { ...timer, state: "Fired" } as Timer;
  const failure = countFailure(asTimer, TIMEOUT_REASON, nowMs);
  const next: TimerAfterDeadline = {
    state: failure.state,
    attempt,
    reachedAtMs: failure.reachedAtMs ?? null,
    deadlineAtMs: failure.deadlineAtMs ?? null,
    lastReason: failure.lastReason ?? null,
    updatedAtMs: nowMs,
  };
  return { kind: failure.state === "TimedOut" ? "timedOut" : "timeout", next };
}
