import { formatInstant } from "../../domain/due-time.js";
import type { TimerCounts, TimerRecord } from "./timer-queries.js";

/** A timer as queries answer it (CONTRACT §9, §11): times as in events, members only when set. */
export interface TimerView {
  readonly tenantId: string;
  readonly serviceCallId: string;
  readonly state: string;
  /** Null only for a tombstone (a cancel of a key that was never scheduled). */
  readonly dueAt: string | null;
  readonly generation: number;
  readonly commandTimestampMs: number;
  /** The timer's last change (CONTRACT §14). */
  readonly updatedAt: string;
  readonly data?: unknown;
  readonly correlationId?: string;
  readonly reachedAt?: string;
  readonly repeat?: unknown;
  readonly occurrence?: number;
  readonly attempt?: number;
  readonly result?: string;
  readonly reason?: string;
  readonly firedAt?: string;
  readonly completedAt?: string;
  readonly durationMs?: number;
  readonly createdBy?: string;
  readonly createdVia?: string;
  readonly traceId?: string;
}

export interface StatsView {
  readonly tenantId: string;
  readonly scheduled: number;
  readonly reached: number;
  readonly missed: number;
  readonly cancelled: number;
  readonly fired: number;
  readonly completed: number;
  readonly failed: number;
  readonly timedOut: number;
  readonly nextDueAt: string | null;
  /** The earliest due time of a Scheduled timer that is already due (the firing backlog), else null. */
  readonly oldestOverdueAt: string | null;
  readonly avgDurationMs: number | null;
}

function parsedJson(text: string | null): unknown {
  if (text === null) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export function timerView(record: TimerRecord): TimerView {
  const data = parsedJson(record.data);
  const repeat = parsedJson(record.repeat);
  return {
    tenantId: record.tenantId,
    serviceCallId: record.serviceCallId,
    state: record.state,
    dueAt: record.dueAtMs === null ? null : formatInstant(record.dueAtMs),
    generation: record.generation,
    commandTimestampMs: record.commandTs,
    updatedAt: formatInstant(record.updatedAtMs),
    ...(data === undefined || data === null ? {} : { data }),
    ...(record.correlationId === null ? {} : { correlationId: record.correlationId }),
    ...(record.reachedAtMs === null ? {} : { reachedAt: formatInstant(record.reachedAtMs) }),
    ...(repeat === undefined || repeat === null
      ? {}
      : { repeat, ...(record.occurrence === null ? {} : { occurrence: record.occurrence }) }),
    ...(record.attempt === null || record.attempt === 0 ? {} : { attempt: record.attempt }),
    ...(record.result === null ? {} : { result: record.result }),
    ...(record.lastReason === null ? {} : { reason: record.lastReason }),
    ...(record.firedAtMs === null ? {} : { firedAt: formatInstant(record.firedAtMs) }),
    ...(record.completedAtMs === null ? {} : { completedAt: formatInstant(record.completedAtMs) }),
    ...(record.completedAtMs === null || record.firedAtMs === null ? {} : { durationMs: record.completedAtMs - record.firedAtMs }),
    ...(record.createdBy === null ? {} : { createdBy: record.createdBy }),
    ...(record.createdVia === null ? {} : { createdVia: record.createdVia }),
    ...(record.traceId == null ? {} : { traceId: record.traceId }),
  };
}

export function statsView(tenantId: string, counts: TimerCounts, nowMs: number): StatsView {
  const { byState, nextDueAtMs, avgDurationMs } = counts;
  return {
    tenantId,
    scheduled: byState.Scheduled,
    reached: byState.Reached,
    missed: byState.Missed,
    cancelled: byState.Cancelled,
    fired: byState.Fired,
    completed: byState.Completed,
    failed: byState.Failed,
    timedOut: byState.TimedOut,
    nextDueAt: nextDueAtMs === null ? null : formatInstant(nextDueAtMs),
    oldestOverdueAt: nextDueAtMs !== null && nextDueAtMs <= nowMs ? formatInstant(nextDueAtMs) : null,
    avgDurationMs: avgDurationMs === null ? null : Math.round(avgDurationMs),
  };
}
