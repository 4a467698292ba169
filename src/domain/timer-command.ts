import type { Recurrence } from "./recurrence.js";

/** A validated request to create or move a timer. */
export interface ScheduleTimerCommand {
  readonly kind: "schedule";
  readonly tenantId: string;
  readonly serviceCallId: string;
  /** The first occurrence (for a cron rule: the first cron time at or after the message's `dueAt`). */
  readonly dueAtMs: number;
  /** JSON text of `data`; null when the command had none. */
  readonly data: string | null;
  readonly correlationId: string | null;
  /** When the sender created the command; orders commands for one key (CONTRACT §3.2). */
  readonly timestampMs: number;
  /** The `repeat` rule (CONTRACT §10); null (or absent) for a one-shot timer. */
  readonly repeat?: Recurrence | null;
  /** `maxLatenessMs` (CONTRACT §10); null (or absent) when any lateness is fine. */
  readonly maxLatenessMs?: number | null;
}

/** A validated request to stop a timer from firing. */
export interface CancelTimerCommand {
  readonly kind: "cancel";
  readonly tenantId: string;
  readonly serviceCallId: string;
  readonly correlationId: string | null;
  readonly timestampMs: number;
}

/**
 * A validated request to cancel every timer of a tenant whose serviceCallId starts with a prefix
 * (CONTRACT §10), as by a `CancelTimer` with this command's timestamp.
 */
export interface CancelTimersByPrefixCommand {
  readonly kind: "cancelPrefix";
  readonly tenantId: string;
  readonly serviceCallIdPrefix: string;
  readonly correlationId: string | null;
  readonly timestampMs: number;
}

/** A command about one timer key. */
export type KeyCommand = ScheduleTimerCommand | CancelTimerCommand;

export type TimerCommand = KeyCommand | CancelTimersByPrefixCommand;
