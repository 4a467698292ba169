/** A validated request to create or move a timer. */
export interface ScheduleTimerCommand {
  readonly kind: "schedule";
  readonly tenantId: string;
  readonly serviceCallId: string;
  readonly dueAtMs: number;
  /** JSON text of `data`; null when the command had none. */
  readonly data: string | null;
  readonly correlationId: string | null;
  /** When the sender created the command; orders commands for one key (CONTRACT §3.2). */
  readonly timestampMs: number;
}

/** A validated request to stop a timer from firing. */
export interface CancelTimerCommand {
  readonly kind: "cancel";
  readonly tenantId: string;
  readonly serviceCallId: string;
  readonly correlationId: string | null;
  readonly timestampMs: number;
}

export type TimerCommand = ScheduleTimerCommand | CancelTimerCommand;
