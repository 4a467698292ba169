import { dueEventId, formatInstant } from "../../domain/due-time.js";
import type { DeadlineDecision, DeadlineTimer } from "../../domain/delivery-rules.js";
import type { FiringDecision } from "../../domain/firing-rules.js";
import { firingEntry, timeoutEntry, type HistoryAppend } from "../../domain/timer-history.js";
import type { DueTimer } from "../timer-store.js";

/** The history entry (CONTRACT §19) of a firing about to be recorded: its event, or why there was none. */
export function firingHistory(timer: DueTimer, firing: FiringDecision, pollNowMs: number, keep: number): HistoryAppend {
  // A firing decided in a catch-up lane carries its own time.
  const nowMs = firing.next.reachedAtMs ?? pollNowMs;
  const attempt = firing.next.tracking?.attempt ?? 1;
  const entry = firingEntry(nowMs, {
    kind: firing.kind === "missed" ? "missed" : "fired",
    eventId: dueEventId(timer.tenantId, timer.serviceCallId, firing.dueAtMs, timer.generation),
    attempt,
    lateMs: firing.lateMs,
    occurrence: firing.occurrence,
    published: firing.kind !== "cancelled",
    ...(firing.kind === "cancelled" ? { reason: "a prefix cancel covers the timer" } : {}),
    ...(firing.kind === "missed" ? { reason: `more than maxLatenessMs (${timer.maxLatenessMs}) late: DueTimeMissed` } : {}),
  });
  return { entry, keep };
}

/** The history entry (CONTRACT §19) of a passed deadline: a retry published, or a completion time-out. */
export function deadlineHistory(timer: DeadlineTimer, decision: DeadlineDecision, nowMs: number, keep: number): HistoryAppend {
  if (decision.kind === "retry") {
    const entry = firingEntry(nowMs, {
      kind: "fired",
      eventId: dueEventId(timer.tenantId, timer.serviceCallId, timer.dueAtMs!, timer.generation, decision.next.attempt),
      attempt: decision.next.attempt,
      lateMs: nowMs - timer.deadlineAtMs,
      occurrence: null,
      published: true,
      reason: "a retry after a failure (delivery.maxRetries)",
    });
    return { entry, keep };
  }
  const then = decision.kind === "timedOut" ? "TimedOut: no attempts left" : `a retry at ${formatInstant(decision.next.deadlineAtMs!)}`;
  return { entry: timeoutEntry(nowMs, timer.attempt, then), keep };
}
