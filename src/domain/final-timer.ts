import type { Timer } from "./timer.js";
import { isRetryable } from "./retry-timer-rules.js";
import type { ScheduleTimerCommand } from "./timer-command.js";

/**
 * Why a newer `ScheduleTimer` for a timer closed to commands is refused (CONTRACT §17): a
 * serviceCallId is used once, so reusing a fired one must not look like success. The text names the
 * state, since when, and what to do instead.
 */
export function timerFinalReason(timer: Timer): string {
  const since = new Date(closedSinceMs(timer)).toISOString();
  const instead = isRetryable(timer.state)
    ? "send RetryTimer to fire it again, or schedule a new serviceCallId"
    : "schedule a new serviceCallId";
  return `timer ${timer.serviceCallId} is ${timer.state} since ${since} and takes no ScheduleTimer any more (a serviceCallId is used once): ${instead}`;
}

/**
 * Only a command newer than the last one applied is refused: a redelivered or re-sent original
 * (timestampMs ≤ commandTs) is the normal at-least-once path and stays silent.
 */
export function isReuseOfFinalTimer(timer: Timer, command: ScheduleTimerCommand): boolean {
  return command.timestampMs > timer.commandTs;
}

/** When the timer entered its state: its firing, its first publish, its completion, else its last change (a failure). */
function closedSinceMs(timer: Timer): number {
  switch (timer.state) {
    case "Reached":
    case "Missed":
      return timer.reachedAtMs ?? timer.updatedAtMs;
    case "Fired":
      return timer.firedAtMs ?? timer.updatedAtMs;
    case "Completed":
      return timer.completedAtMs ?? timer.updatedAtMs;
    default:
      return timer.updatedAtMs;
  }
}
