import type { Timer, TimerKey, TimerState } from "./timer.js";
import { latestDueOccurrence, nextOccurrence, type RecurrenceCalendar } from "./recurrence.js";
import { firstPublish, type DeliveryPolicy } from "./delivery-rules.js";

/** What firing needs of a due timer: its version, its series and lateness policy, its last command. */
export type FiringTimer = TimerKey &
  Pick<Timer, "generation" | "occurrence" | "repeat" | "maxLatenessMs" | "commandTs" | "reachedAtMs"> & {
    readonly dueAtMs: number;
    /** `delivery` (CONTRACT §11): the published timer becomes `Fired`. Null or absent: not tracked. */
    readonly delivery?: DeliveryPolicy | null;
  };

/**
 * What the timer becomes once its event is out (or once it is found cancelled): the columns the
 * store writes, guarded by the due time and generation that were read.
 */
export interface TimerAfterFiring {
  readonly state: TimerState;
  readonly dueAtMs: number;
  readonly occurrence: number;
  readonly reachedAtMs: number | null;
  readonly commandTs: number;
  readonly updatedAtMs: number;
  /** For a timer that becomes `Fired` (CONTRACT §11): its first publish and completion time-out. */
  readonly tracking?: { readonly attempt: number; readonly firedAtMs: number; readonly deadlineAtMs: number };
}

/**
 * What firing a due timer at `nowMs` produces (CONTRACT §3.1, §10):
 * - `reached`: publish `DueTimeReached` for the occurrence at `dueAtMs`;
 * - `missed`: publish `DueTimeMissed` instead, it is more than `maxLatenessMs` late;
 * - `cancelled`: publish nothing, a recorded prefix cancel covers the timer.
 * After downtime the occurrences of a recurring timer that all fell due are coalesced into the
 * latest of them; `missedOccurrences` counts the earlier ones it stands for.
 */
export interface FiringDecision {
  readonly kind: "reached" | "missed" | "cancelled";
  readonly dueAtMs: number;
  /** The occurrence's number, for a recurring timer; null for a one-shot. */
  readonly occurrence: number | null;
  readonly missedOccurrences: number;
  /** More occurrences were missed than a catch-up counts: the counts are lower bounds. */
  readonly missedOccurrencesCapped: boolean;
  readonly lateMs: number;
  readonly next: TimerAfterFiring;
}

/**
 * Decides what firing `timer` at `nowMs` produces and what the timer becomes. `prefixCancelTs` is the
 * newest recorded prefix cancel matching the timer's key (null when none). Pure.
 */
export function decideFiring(
  timer: FiringTimer,
  nowMs: number,
  calendar: RecurrenceCalendar,
  prefixCancelTs: number | null,
): FiringDecision {
  const { repeat, maxLatenessMs } = timer;
  if (prefixCancelTs !== null && timer.commandTs <= prefixCancelTs) {
    return {
      kind: "cancelled",
      dueAtMs: timer.dueAtMs,
      occurrence: repeat === null ? null : timer.occurrence,
      missedOccurrences: 0,
      missedOccurrencesCapped: false,
      lateMs: nowMs - timer.dueAtMs,
      next: {
        state: "Cancelled",
        dueAtMs: timer.dueAtMs,
        occurrence: timer.occurrence,
        reachedAtMs: timer.reachedAtMs,
        commandTs: prefixCancelTs,
        updatedAtMs: nowMs,
      },
    };
  }
  const current = { dueAtMs: timer.dueAtMs, occurrence: timer.occurrence };
  const { latest, skipped, capped } =
    repeat === null ? { latest: current, skipped: 0, capped: false } : latestDueOccurrence(repeat, current, nowMs, calendar);
  const lateMs = nowMs - latest.dueAtMs;
  const kind = maxLatenessMs !== null && lateMs > maxLatenessMs ? "missed" : "reached";
  const following = repeat === null ? null : nextOccurrence(repeat, latest, calendar);
  const after = { reachedAtMs: nowMs, commandTs: timer.commandTs, updatedAtMs: nowMs };
  const next: TimerAfterFiring =
    following !== null
      ? { state: "Scheduled", dueAtMs: following.dueAtMs, occurrence: following.occurrence, ...after }
      : kind === "reached" && timer.delivery
        ? // A tracked timer waits for its consumer's report (CONTRACT §11).
          {
            state: "Fired",
            dueAtMs: latest.dueAtMs,
            occurrence: latest.occurrence,
            ...after,
            tracking: firstPublish(timer.delivery, nowMs),
          }
        : // The last occurrence: the timer ends as its last event says.
          { state: kind === "missed" ? "Missed" : "Reached", dueAtMs: latest.dueAtMs, occurrence: latest.occurrence, ...after };
  return {
    kind,
    dueAtMs: latest.dueAtMs,
    occurrence: repeat === null ? null : latest.occurrence,
    missedOccurrences: skipped,
    missedOccurrencesCapped: capped,
    lateMs,
    next,
  };
}
