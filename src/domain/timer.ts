import type { Recurrence } from "./recurrence.js";
import type { DeliveryPolicy } from "./delivery-policy.js";
import type { TraceMembers } from "./trace-context.js";

/**
 * The lifecycle of a timer (CONTRACT §3, §10, §11). `Reached` and `Missed` are final; a `Cancelled`
 * timer is final unless a newer `ScheduleTimer` re-arms it. A timer with `delivery` becomes `Fired`
 * when its event is out and ends `Completed`, `Failed` or `TimedOut` by the consumer's reports.
 */
export type TimerState = "Scheduled" | "Reached" | "Cancelled" | "Missed" | "Fired" | "Completed" | "Failed" | "TimedOut";

/**
 * States no `ScheduleTimer` or `CancelTimer` changes any more (CONTRACT §3.4). Not all of them are
 * the end of the timer: a `Fired` timer's event is out and only the consumer's reports move it on
 * (§11); `RetryTimer` re-arms `Failed`, `TimedOut` and `Missed` ones (§14).
 */
export function isClosedToCommands(state: TimerState): boolean {
  return state !== "Scheduled" && state !== "Cancelled";
}

/** A timer is identified by its tenant and the caller's id; tenants never see each other's timers. */
export interface TimerKey {
  readonly tenantId: string;
  readonly serviceCallId: string;
}

/** One string per key, for maps and sets (NUL cannot occur in a tenant id). */
export function timerKeyString(key: TimerKey): string {
  return `${key.tenantId}\u0000${key.serviceCallId}`;
}

/**
 * A stored timer.
 *
 * `data` is the JSON text of the command's `data` (null when absent or null), kept as text so that it
 * is echoed byte-for-byte in `DueTimeReached` without being parsed again.
 * `dueAtMs` is null only for a tombstone: a `CancelTimer` for a key that was never scheduled.
 * `commandTs` is the largest `timestampMs` of the commands applied to the timer (CONTRACT §3.2).
 * `generation` is 1 when the timer is created and grows by one each time a command changes what it
 * fires (due time, data, correlationId, repeat) or re-arms it (CONTRACT §10); it names one version of
 * the timer in event ids and guards the mark after publishing (§3.1). A change of `maxLatenessMs`
 * alone is stored without a new generation: it decides how an occurrence goes out, not what it is.
 * `repeat` is null for a one-shot timer; `occurrence` is the number of the occurrence `dueAtMs` is
 * (1 for a one-shot). `reachedAtMs` is when the timer last fired (a recurring timer fires many times).
 * `maxLatenessMs` null: any lateness is fine. The trace members are the trace context of the command
 * that last set what the timer fires (CONTRACT §13).
 */
export interface Timer extends TimerKey, TraceMembers {
  readonly state: TimerState;
  readonly dueAtMs: number | null;
  readonly data: string | null;
  readonly correlationId: string | null;
  readonly commandTs: number;
  readonly generation: number;
  readonly registeredAtMs: number;
  readonly reachedAtMs: number | null;
  readonly updatedAtMs: number;
  readonly repeat: Recurrence | null;
  readonly occurrence: number;
  readonly maxLatenessMs: number | null;
  /** `delivery` (CONTRACT §11); null or absent: not tracked after firing. */
  readonly delivery?: DeliveryPolicy | null;
  readonly createdBy?: string | null;
  readonly createdVia?: string | null;
  /** Publishes of the event so far (§11 `attempt`); 0 or absent before the first. */
  readonly attempt?: number;
  /** The first publish of a tracked timer. */
  readonly firedAtMs?: number | null;
  readonly completedAtMs?: number | null;
  /** `TimerCompleted`'s result. */
  readonly result?: string | null;
  /** The last failure's reason (`timeout` for a completion time-out). */
  readonly lastReason?: string | null;
  /**
   * For a `Fired` timer, when it must be looked at again: the completion time-out of the publish
   * in hand, or, while `reachedAtMs` is null (no publish in hand, a failure was counted), its retry.
   */
  readonly deadlineAtMs?: number | null;
  /**
   * Its last entries (CONTRACT §19) as the text of a JSON array, oldest first (timer-history.ts); null
   * or absent: none. Stored apart from the timer's row: present only where a timer is read or
   * written with its history (an export or import with history, the memory store).
   */
  readonly history?: string | null;
}

/** A timer that is due to fire: `Scheduled` always has a due time. */
export interface ScheduledTimer extends Timer {
  readonly state: "Scheduled";
  readonly dueAtMs: number;
}

export function isScheduled(timer: Timer | undefined): timer is ScheduledTimer {
  return timer !== undefined && timer.state === "Scheduled" && timer.dueAtMs !== null;
}
