export type CommandType = "ScheduleTimer" | "CancelTimer" | "unknown";
export type CommandOutcome = "accepted" | "ignored" | "rejected";

/** What the application reports for observability (CONTRACT §5). */
export interface TimerMetrics {
  commandHandled(type: CommandType, outcome: CommandOutcome): void;
  /** Timers published as `DueTimeReached` and marked `Reached`, with each one's lag in seconds. */
  timersFired(lagSeconds: readonly number[]): void;
  publishFailed(count: number): void;
  pollCompleted(durationSeconds: number, endedAtMs: number): void;
  /** Sets the number of `Scheduled` timers. */
  setPending(count: number): void;
  /** Moves the number of `Scheduled` timers by `delta`. */
  addPending(delta: number): void;
}
