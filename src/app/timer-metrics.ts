import type { CommandName } from "./subjects.js";

/** A command's type, or `unknown` when its subject names none. */
export type CommandType = CommandName | "unknown";
/** Outcomes of tracked deliveries (CONTRACT §11 `timer_deliveries_total{outcome}`). */
export type DeliveryOutcome = "completed" | "retried" | "failed" | "timed_out";
export type CommandOutcome = "accepted" | "ignored" | "rejected";

/** What the application reports for observability (CONTRACT §5). */
export interface TimerMetrics {
  commandHandled(type: CommandType, outcome: CommandOutcome): void;
  /** A command refused with a `CommandRejected` of this code (CONTRACT §12 `timer_commands_rejected_total{code}`). */
  commandRejected(code: string): void;
  /** Timers published as `DueTimeReached` and marked `Reached`, with each one's lag in seconds. */
  timersFired(lagSeconds: readonly number[]): void;
  /** Timers published as `DueTimeMissed` (CONTRACT §8 `timer_schedules_missed_total`). */
  timersMissed(count: number): void;
  publishFailed(count: number): void;
  pollCompleted(durationSeconds: number, endedAtMs: number): void;
  /** Tracked deliveries that ended or were retried (CONTRACT §11). */
  deliveriesCounted(outcome: DeliveryOutcome, count: number): void;
  /** Completed deliveries: completedAt − firedAt of each, in seconds. */
  deliveriesCompleted(durationSeconds: readonly number[]): void;
  /** Sets the number of `Scheduled` timers. */
  setPending(count: number): void;
  /** Moves the number of `Scheduled` timers by `delta`. */
  addPending(delta: number): void;
}
