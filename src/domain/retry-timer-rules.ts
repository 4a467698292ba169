import type { Timer, TimerState } from "./timer.js";
import type { RetryTimerCommand } from "./timer-command.js";
import type { KeyDecision } from "./key-decision.js";
import { traceMembers } from "./trace-context.js";

/** The final states whose work did not get done, which a `RetryTimer` re-arms (CONTRACT §14). */
export const RETRYABLE_STATES: readonly TimerState[] = ["Failed", "TimedOut", "Missed"];

export function isRetryable(state: TimerState): boolean {
  return RETRYABLE_STATES.includes(state);
}

/**
 * The effect of a `RetryTimer` (CONTRACT §14): a `Failed`, `TimedOut` or `Missed` timer becomes
 * `Scheduled` again, due at the command's `timestampMs` (it fires at once), as a new generation
 * whose attempts count from 1. Anything else — unknown key, any other state — ignores it.
 *
 * Ordering (§3.2): only a command newer than the timer's last one applies; at an equal timestamp
 * it is ignored, so a redelivered retry never re-arms the timer a second time after the first retry
 * ended `Failed` again. A retry not newer than a recorded prefix cancel that covers the key is
 * ignored too: that cancel would stop the retried timer from firing anyway.
 *
 * The retried version fires whatever its lateness: `maxLatenessMs` is dropped, since the operator
 * asked for it to go out now and a retry of a `Missed` timer would otherwise just miss again.
 * `correlationId` is the retry's when it carries one, else the timer's.
 */
export function decideRetry(
  current: Timer | undefined,
  command: RetryTimerCommand,
  nowMs: number,
  prefixCancelTs: number | null,
): KeyDecision {
  const ignored: KeyDecision = { outcome: "ignored", previous: current };
  if (current === undefined || !isRetryable(current.state)) return ignored;
  if (command.timestampMs <= current.commandTs) return ignored;
  if (prefixCancelTs !== null && command.timestampMs <= prefixCancelTs) return ignored;
  // The tracking of the previous version's publishes ends; lastReason stays as history.
  const { attempt: _attempt, firedAtMs: _fired, completedAtMs: _completed, result: _result, deadlineAtMs: _deadline, ...kept } = current;
  const next: Timer = {
    ...kept,
    state: "Scheduled",
    dueAtMs: command.timestampMs,
    correlationId: command.correlationId ?? current.correlationId,
    commandTs: command.timestampMs,
    generation: current.generation + 1,
    reachedAtMs: null,
    updatedAtMs: nowMs,
    maxLatenessMs: null,
    ...(command.trace === undefined ? {} : traceMembers(command.trace)),
  };
  return { outcome: "accepted", previous: current, next };
}
