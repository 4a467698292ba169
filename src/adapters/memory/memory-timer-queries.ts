import { listByKeyset } from "../../app/queries/keyset-list.js";
import { compareCodePoints } from "../../domain/code-point-order.js";
import { compareChangedDesc, listByChanged } from "../../app/queries/changed-list.js";
import { histogramOf, windowEndOf } from "../../app/queries/due-histogram.js";
import {
  TIMER_STATES,
  type StoredTimerState,
  type ChangedPage,
  type DueHistogram,
  type DueHistogramQuery,
  type TimerCounts,
  type TimerListQuery,
  type TimerPage,
  type TimerQueries,
  type TimerRecord,
} from "../../app/queries/timer-queries.js";
import { recurrenceText, type Recurrence } from "../../domain/recurrence.js";
import { timerKeyString, type Timer, type TimerKey } from "../../domain/timer.js";
import type { MemoryTimerStore } from "./memory-timer-store.js";

type Loose = Timer & Partial<Record<string, unknown>>;

const numberOr = (value: unknown, fallback: number | null): number | null => (typeof value === "number" ? value : fallback);
const textOr = (value: unknown): string | null => (typeof value === "string" ? value : null);
const repeatText = (value: unknown): string | null =>
  value === undefined || value === null ? null : typeof value === "string" ? value : recurrenceText(value as Recurrence);

/** A memory timer as a record; the members of recurring and tracked timers are read when the timer carries them. */
export function memoryRecord(timer: Timer): TimerRecord {
  const t = timer as Loose;
  return {
    tenantId: t.tenantId,
    serviceCallId: t.serviceCallId,
    state: t.state as StoredTimerState,
    dueAtMs: t.dueAtMs,
    data: t.data,
    correlationId: t.correlationId,
    commandTs: t.commandTs,
    generation: t.generation,
    registeredAtMs: t.registeredAtMs,
    reachedAtMs: t.reachedAtMs,
    updatedAtMs: t.updatedAtMs,
    repeat: repeatText(t.repeat),
    occurrence: numberOr(t.occurrence, null),
    attempt: numberOr(t.attempt, null),
    firedAtMs: numberOr(t.firedAtMs, null),
    completedAtMs: numberOr(t.completedAtMs, null),
    result: textOr(t.result),
    lastReason: textOr(t.lastReason),
    createdBy: textOr(t.createdBy),
    createdVia: textOr(t.createdVia),
    traceId: textOr(t.traceId),
  };
}

function compareListed(a: { dueAtMs: number; serviceCallId: string }, b: { dueAtMs: number; serviceCallId: string }): number {
  return a.dueAtMs - b.dueAtMs || compareCodePoints(a.serviceCallId, b.serviceCallId);
}

/** Queries over a MemoryTimerStore, by scanning its map (tests only; the reference for the others). */
export class MemoryTimerQueries implements TimerQueries {
  constructor(private readonly store: MemoryTimerStore) {}

  async get(key: TimerKey, options?: { readonly history?: boolean }): Promise<TimerRecord | undefined> {
    const timer = await this.store.get(key);
    if (timer === undefined) return undefined;
    return options?.history === true ? { ...memoryRecord(timer), history: timer.history ?? null } : memoryRecord(timer);
  }

  async list(query: TimerListQuery): Promise<TimerPage> {
    const { tenantId, state, dueAfterMs, dueBeforeMs, after } = query;
    return listByKeyset(
      query,
      (scanLimit) =>
        [...this.store.timers()]
          .filter((t): t is Timer & { dueAtMs: number } => t.tenantId === tenantId && t.dueAtMs !== null)
          .filter((t) => (state === undefined || t.state === state) && (dueAfterMs === undefined || t.dueAtMs >= dueAfterMs))
          .filter((t) => (dueBeforeMs === undefined || t.dueAtMs < dueBeforeMs) && (after === undefined || compareListed(t, after) > 0))
          .sort(compareListed)
          .slice(0, scanLimit)
          .map((t) => ({ state: t.state as StoredTimerState, dueAtMs: t.dueAtMs, serviceCallId: t.serviceCallId })),
      (ids) => {
        const wanted = new Set(ids.map((serviceCallId) => timerKeyString({ tenantId, serviceCallId })));
        return [...this.store.timers()].filter((t) => wanted.has(timerKeyString(t))).map(memoryRecord);
      },
    );
  }

  async listChanged(query: TimerListQuery): Promise<ChangedPage> {
    const { tenantId } = query;
    return listByChanged(
      query,
      ({ index, before, sinceMs, scanLimit }) =>
        [...this.store.timers()]
          .filter((t) => t.tenantId === tenantId && t.updatedAtMs >= sinceMs)
          .filter((t) =>
            index.by === "state" ? t.state === index.state : index.by === "createdBy" ? t.createdBy === index.createdBy : true,
          )
          .filter((t) => compareChangedDesc(t, before, compareCodePoints) > 0)
          .sort((a, b) => compareChangedDesc(a, b, compareCodePoints))
          .slice(0, scanLimit)
          .map((t) => ({ updatedAtMs: t.updatedAtMs, serviceCallId: t.serviceCallId })),
      (ids) => {
        const wanted = new Set(ids.map((serviceCallId) => timerKeyString({ tenantId, serviceCallId })));
        return [...this.store.timers()].filter((t) => wanted.has(timerKeyString(t))).map(memoryRecord);
      },
    );
  }

  async dueHistogram(query: DueHistogramQuery): Promise<DueHistogram> {
    const { tenantId, fromMs, bucketMs, cap } = query;
    const scheduled = [...this.store.timers()].filter((t) => t.tenantId === tenantId && t.state === "Scheduled" && t.dueAtMs !== null);
    const overdue = scheduled.filter((t) => t.dueAtMs! < fromMs).length;
    const window = scheduled
      .map((t) => t.dueAtMs!)
      .filter((dueAtMs) => dueAtMs >= fromMs && dueAtMs < windowEndOf(query))
      .sort((a, b) => a - b)
      .slice(0, cap + 1);
    const counts = new Map<number, number>();
    for (const dueAtMs of window) {
      const bucket = Math.floor((dueAtMs - fromMs) / bucketMs);
      counts.set(bucket, (counts.get(bucket) ?? 0) + 1);
    }
    return histogramOf(
      query,
      overdue,
      [...counts].map(([bucket, count]) => ({ bucket, count })),
    );
  }

  async stats(tenantId: string): Promise<TimerCounts> {
    const byState = Object.fromEntries(TIMER_STATES.map((s) => [s, 0])) as Record<StoredTimerState, number>;
    let nextDueAtMs: number | null = null;
    let durations = 0;
    let completed = 0;
    for (const timer of this.store.timers()) {
      if (timer.tenantId !== tenantId) continue;
      const record = memoryRecord(timer);
      byState[record.state]++;
      if (record.state === "Scheduled" && record.dueAtMs !== null && (nextDueAtMs === null || record.dueAtMs < nextDueAtMs))
        nextDueAtMs = record.dueAtMs;
      if (record.state === "Completed" && record.completedAtMs !== null && record.firedAtMs !== null) {
        durations += record.completedAtMs - record.firedAtMs;
        completed++;
      }
    }
    return { byState, nextDueAtMs, avgDurationMs: completed === 0 ? null : durations / completed };
  }

  async tenants(limit: number): Promise<string[]> {
    const tenants = new Set<string>();
    for (const timer of this.store.timers()) tenants.add(timer.tenantId);
    return [...tenants].sort(compareCodePoints).slice(0, limit);
  }
}
