import { LIST_SCAN_BUDGET } from "./keyset-list.js";
import type { ChangedPage, ChangedPosition, TimerListQuery, TimerRecord } from "./timer-queries.js";

/** One entry of an index ordered by (updated_at, service_call_id). */
export interface ChangedKey {
  readonly updatedAtMs: number;
  readonly serviceCallId: string;
}

/**
 * Which index a `changedDesc` scan walks: the tenant's `createdBy` range when that filter is given,
 * else its `state` range, else all of the tenant's timers; each ordered by (updated_at,
 * service_call_id) and walked backwards.
 */
export type ChangedIndex =
  { readonly by: "createdBy"; readonly createdBy: string } | { readonly by: "state"; readonly state: string } | { readonly by: "tenant" };

export function changedIndexOf(query: TimerListQuery): ChangedIndex {
  if (query.createdBy !== undefined) return { by: "createdBy", createdBy: query.createdBy };
  if (query.state !== undefined) return { by: "state", state: query.state };
  return { by: "tenant" };
}

/** What a `changedDesc` scan asks of the index: entries strictly before `before`, not older than `sinceMs`. */
export interface ChangedScan {
  readonly index: ChangedIndex;
  readonly before: ChangedKey;
  /** Inclusive lower bound of updated_at (`changedSince`), or NO_LOWER_BOUND. */
  readonly sinceMs: number;
  readonly scanLimit: number;
}

const FIRST_AFTER_SNAPSHOT = "";

/**
 * A page most recently changed first (CONTRACT §14). `scan` reads index entries newest first,
 * index only; `fetch` reads the rows. Filters the chosen index does not hold (state beside
 * createdBy, prefix, due range) are checked on the rows, within the scan budget; a row changed
 * since the listing's snapshot (or between scan and fetch) is left out, as in due order.
 */
export async function listByChanged(
  query: TimerListQuery,
  scan: (request: ChangedScan) => Promise<readonly ChangedKey[]> | readonly ChangedKey[],
  fetch: (serviceCallIds: readonly string[]) => Promise<readonly TimerRecord[]> | readonly TimerRecord[],
): Promise<ChangedPage> {
  const snapshotMs = query.afterChanged?.snapshotMs ?? query.nowMs;
  const index = changedIndexOf(query);
  const rowFiltered =
    query.serviceCallIdPrefix !== undefined ||
    query.dueAfterMs !== undefined ||
    query.dueBeforeMs !== undefined ||
    (index.by === "createdBy" && query.state !== undefined);
  const scanLimit = rowFiltered ? Math.max(query.limit + 1, LIST_SCAN_BUDGET) : query.limit + 1;
  // Before the first page: everything changed at or before the snapshot ("" sorts first, so +1 ms).
  const before: ChangedKey = query.afterChanged ?? { updatedAtMs: snapshotMs + 1, serviceCallId: FIRST_AFTER_SNAPSHOT };
  const scanned = await scan({ index, before, sinceMs: query.changedSinceMs ?? -Number.MAX_SAFE_INTEGER, scanLimit });
  const rows = scanned.length === 0 ? [] : await fetch(scanned.map((key) => key.serviceCallId));
  const byId = new Map(rows.map((row) => [row.serviceCallId, row]));
  const matches = (row: TimerRecord, key: ChangedKey): boolean =>
    row.updatedAtMs === key.updatedAtMs &&
    row.updatedAtMs <= snapshotMs &&
    row.dueAtMs !== null &&
    (query.state === undefined || row.state === query.state) &&
    (query.createdBy === undefined || row.createdBy === query.createdBy) &&
    (query.serviceCallIdPrefix === undefined || row.serviceCallId.startsWith(query.serviceCallIdPrefix)) &&
    (query.dueAfterMs === undefined || row.dueAtMs >= query.dueAfterMs) &&
    (query.dueBeforeMs === undefined || row.dueAtMs < query.dueBeforeMs);
  const timers: TimerRecord[] = [];
  let last: ChangedKey | undefined;
  for (const key of scanned) {
    const row = byId.get(key.serviceCallId);
    if (row === undefined || !matches(row, key)) continue;
    if (timers.length === query.limit) {
      const end = timers[timers.length - 1]!;
      last = { updatedAtMs: end.updatedAtMs, serviceCallId: end.serviceCallId };
      break;
    }
    timers.push(row);
  }
  if (last === undefined && scanned.length === scanLimit) last = scanned[scanned.length - 1];
  const next: ChangedPosition | null =
    last === undefined ? null : { snapshotMs, updatedAtMs: last.updatedAtMs, serviceCallId: last.serviceCallId };
  return { timers, next };
}

/** Newest first: by updatedAtMs descending, then serviceCallId descending (code points). */
export function compareChangedDesc(a: ChangedKey, b: ChangedKey, compareIds: (x: string, y: string) => number): number {
  return b.updatedAtMs - a.updatedAtMs || compareIds(b.serviceCallId, a.serviceCallId);
}
