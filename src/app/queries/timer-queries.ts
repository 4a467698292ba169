import type { TimerKey } from "../../domain/timer.js";

/** Every state a stored timer can be in (CONTRACT §3, §10, §11). */
export const TIMER_STATES = ["Scheduled", "Reached", "Cancelled", "Missed", "Fired", "Completed", "Failed", "TimedOut"] as const;
export type StoredTimerState = (typeof TIMER_STATES)[number];

/**
 * A stored timer as queries show it: every column of the row, instants in epoch ms. The members of
 * recurring timers (§10) and completion tracking (§11) are null when the store has none for the timer.
 */
export interface TimerRecord extends TimerKey {
  readonly state: StoredTimerState;
  /** Null only for a tombstone: the cancel of a key that was never scheduled. */
  readonly dueAtMs: number | null;
  /** JSON text. */
  readonly data: string | null;
  readonly correlationId: string | null;
  readonly commandTs: number;
  readonly generation: number;
  readonly registeredAtMs: number;
  readonly reachedAtMs: number | null;
  readonly updatedAtMs: number;
  /** JSON text of the `repeat` rule. */
  readonly repeat: string | null;
  readonly occurrence: number | null;
  readonly attempt: number | null;
  readonly firedAtMs: number | null;
  readonly completedAtMs: number | null;
  readonly result: string | null;
  readonly lastReason: string | null;
  readonly createdBy: string | null;
  readonly createdVia: string | null;
  /** The trace its events continue (CONTRACT §13); null for a timer stored before tracing. */
  readonly traceId?: string | null;
  /** Its history (CONTRACT §19), the stored JSON text; only when asked for (`get` with `history`). */
  readonly history?: string | null;
}

/**
 * Where a listing stands: after the timer at (dueAtMs, serviceCallId), showing only timers not
 * changed since `snapshotMs` (the time of the first page), so a timer moved behind the cursor after
 * it was listed is not listed twice.
 */
export interface ListPosition {
  readonly snapshotMs: number;
  readonly dueAtMs: number;
  readonly serviceCallId: string;
}

/**
 * Where a listing most recently changed first stands (CONTRACT §14 `order: "changedDesc"`): after
 * the timer at (updatedAtMs, serviceCallId), going back in time, showing only timers not changed
 * since `snapshotMs`.
 */
export interface ChangedPosition {
  readonly snapshotMs: number;
  readonly updatedAtMs: number;
  readonly serviceCallId: string;
}

/** `due`: by (dueAt, serviceCallId); `changedDesc`: by (updatedAt, serviceCallId), newest first. */
export type ListOrder = "due" | "changedDesc";

export interface TimerListQuery {
  readonly tenantId: string;
  readonly state?: StoredTimerState;
  readonly serviceCallIdPrefix?: string;
  /** Exact `createdBy` (CONTRACT §14). */
  readonly createdBy?: string;
  /** Only timers last changed at or after this (CONTRACT §14). */
  readonly changedSinceMs?: number;
  /** The position of a `listChanged` listing (`after` is `list`'s). */
  readonly afterChanged?: ChangedPosition;
  /** Inclusive. */
  readonly dueAfterMs?: number;
  /** Exclusive. */
  readonly dueBeforeMs?: number;
  /** 1 … 1000. */
  readonly limit: number;
  readonly after?: ListPosition;
  /** The snapshot time of a first page (no `after`). */
  readonly nowMs: number;
}

/**
 * One page, ordered by (dueAtMs, serviceCallId). `next` is null when nothing follows. A page may
 * hold fewer than `limit` timers while `next` is set: each page examines a bounded number of index
 * entries (LIST_SCAN_BUDGET), which a rare `serviceCallIdPrefix` may exhaust.
 */
export interface TimerPage {
  readonly timers: readonly TimerRecord[];
  readonly next: ListPosition | null;
}

/** One page most recently changed first; `next` null when nothing follows. */
export interface ChangedPage {
  readonly timers: readonly TimerRecord[];
  readonly next: ChangedPosition | null;
}

/** `Scheduled` timers of one tenant by due time: overdue ones, then `buckets` ranges of `bucketMs`. */
export interface DueHistogramQuery {
  readonly tenantId: string;
  readonly fromMs: number;
  readonly bucketMs: number;
  readonly buckets: number;
  /** Index entries counted at most, per part: beyond it the count is a lower bound (`capped`). */
  readonly cap: number;
}

export interface DueHistogram {
  /** Due before `fromMs`. */
  readonly overdue: number;
  readonly overdueCapped: boolean;
  /** One count per bucket, in time order. */
  readonly counts: readonly number[];
  /** The buckets hold more than `cap` timers: the last counts are too low. */
  readonly capped: boolean;
}

export interface TimerCounts {
  readonly byState: Readonly<Record<StoredTimerState, number>>;
  /** Earliest dueAtMs of a Scheduled timer. */
  readonly nextDueAtMs: number | null;
  /** Mean of completedAt − firedAt over Completed timers. */
  readonly avgDurationMs: number | null;
}

/**
 * Read-only questions about stored timers (CONTRACT §9), answered from indexes: `get` is a key
 * lookup, a `list` page costs a bounded index range, `stats` counts one tenant's index range.
 * Every adapter passes `test/contract/timer-queries.contract.ts`.
 */
export interface TimerQueries {
  /** With `history`: the record carries the timer's history, read with it. */
  get(key: TimerKey, options?: { readonly history?: boolean }): Promise<TimerRecord | undefined>;
  /** Tombstones (no dueAt) are not listed; `get` shows them. */
  list(query: TimerListQuery): Promise<TimerPage>;
  /**
   * The same filters, most recently changed first (CONTRACT §14 `order: "changedDesc"`), from an
   * index ordered by updated_at: the tenant's `createdBy` range, else its `state` range, else all.
   */
  listChanged(query: TimerListQuery): Promise<ChangedPage>;
  stats(tenantId: string): Promise<TimerCounts>;
  /**
   * What is coming (the admin page's chart): a bounded walk of the tenant's `Scheduled` slice of
   * the (tenant, state, due_at) index, index only, at most `cap` entries for each part.
   */
  dueHistogram(query: DueHistogramQuery): Promise<DueHistogram>;
  /** Tenants that have at least one stored timer, in code point order, at most `limit`. */
  tenants(limit: number): Promise<string[]>;
}
