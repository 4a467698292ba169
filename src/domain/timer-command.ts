import type { Recurrence } from "./recurrence.js";
import type { DeliveryPolicy } from "./delivery-policy.js";
import type { TraceContext } from "./trace-context.js";

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
  /** `delivery` (CONTRACT §11); null (or absent): not tracked after firing. Never with `repeat`. */
  readonly delivery?: DeliveryPolicy | null;
  readonly createdBy?: string | null;
  readonly createdVia?: string | null;
  /** The trace its events continue (CONTRACT §13); absent: the timer keeps the trace it has. */
  readonly trace?: TraceContext;
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

/** The consumer's report that the work of a fired timer is done (CONTRACT §11 `TimerCompleted`). */
export interface TimerCompletedCommand {
  readonly kind: "complete";
  readonly tenantId: string;
  readonly serviceCallId: string;
  /** At most 1024 code points; null when the report had none. */
  readonly result: string | null;
  readonly correlationId: string | null;
  readonly timestampMs: number;
}

/** The consumer's report that the work of a fired timer failed (CONTRACT §11 `TimerFailed`). */
export interface TimerFailedCommand {
  readonly kind: "fail";
  readonly tenantId: string;
  readonly serviceCallId: string;
  readonly reason: string;
  readonly correlationId: string | null;
  readonly timestampMs: number;
}

/**
 * An operator's request to fire a timer that ended without its work done (`Failed`, `TimedOut`,
 * `Missed`) once more, now (CONTRACT §14 `RetryTimer`).
 */
export interface RetryTimerCommand {
  readonly kind: "retry";
  readonly tenantId: string;
  readonly serviceCallId: string;
  readonly correlationId: string | null;
  /** Also the new due time: the retried timer fires at once. */
  readonly timestampMs: number;
  /** The trace the retried timer's events continue; absent: the timer keeps its trace. */
  readonly trace?: TraceContext;
}

/** A consumer's report about a fired timer. */
export type ReportCommand = TimerCompletedCommand | TimerFailedCommand;

/** A command about one timer key. */
export type KeyCommand = ScheduleTimerCommand | CancelTimerCommand | ReportCommand | RetryTimerCommand;

export type TimerCommand = KeyCommand | CancelTimersByPrefixCommand;
