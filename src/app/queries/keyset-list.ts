import type { ListPosition, StoredTimerState, TimerListQuery, TimerPage, TimerRecord } from "./timer-queries.js";

/**
 * Index entries one `list` page may examine when a `serviceCallIdPrefix` filters the range: the
 * range is ordered by due time, so a rare prefix could otherwise walk a whole tenant. A page that
 * runs out of budget comes back short, with a cursor after the last entry examined.
 */
export const LIST_SCAN_BUDGET = 2_000;

/** One entry of a tenant's (state, dueAt, serviceCallId) index range. */
export interface ScannedKey {
  readonly state: StoredTimerState;
  readonly dueAtMs: number;
  readonly serviceCallId: string;
}

/** Below every instant a timer can have. */
export const NO_LOWER_BOUND = -Number.MAX_SAFE_INTEGER;
/** Above every instant a timer can have. */
export const NO_UPPER_BOUND = Number.MAX_SAFE_INTEGER;

/**
 * Where a page's scan starts: strictly after this (dueAt, serviceCallId) position, the later of the
 * cursor and (`dueAfterMs`, ""). Since no serviceCallId is empty, "after (X, '')" means "dueAt ≥ X".
 * One lower bound, not two: Postgres given both `due_at >= X` and a row comparison with the cursor
 * starts its index scan at the row comparison, and with no cursor walked every entry before X
 * (32 ms for a list at 1M timers).
 */
export function scanStartOf(query: TimerListQuery): { readonly dueAtMs: number; readonly serviceCallId: string } {
  const dueAfter = { dueAtMs: query.dueAfterMs ?? NO_LOWER_BOUND, serviceCallId: "" };
  const after = query.after;
  if (after === undefined) return dueAfter;
  // At the same instant any serviceCallId but "" lies after "" (code point order).
  const afterIsLater = after.dueAtMs > dueAfter.dueAtMs || (after.dueAtMs === dueAfter.dueAtMs && after.serviceCallId !== "");
  return afterIsLater ? { dueAtMs: after.dueAtMs, serviceCallId: after.serviceCallId } : dueAfter;
}

/**
 * The filters of CONTRACT §14 that the due-order index does not hold (`createdBy`,
 * `changedSince`): checked on the fetched rows, within the page's scan budget. Undefined: none.
 */
export function rowFilterOf(query: TimerListQuery): ((row: TimerRecord) => boolean) | undefined {
  const { createdBy, changedSinceMs } = query;
  if (createdBy === undefined && changedSinceMs === undefined) return undefined;
  return (row) =>
    (createdBy === undefined || row.createdBy === createdBy) && (changedSinceMs === undefined || row.updatedAtMs >= changedSinceMs);
}

/** How many index entries to read for `query`. */
export function scanLimitOf(query: TimerListQuery): number {
  const filtered = query.serviceCallIdPrefix !== undefined || rowFilterOf(query) !== undefined;
  return filtered ? Math.max(query.limit + 1, LIST_SCAN_BUDGET) : query.limit + 1;
}

/**
 * The paging shared by the adapters. `scan` reads up to `scanLimit` entries of the index range
 * after the cursor, in (dueAt, serviceCallId) order, index only; `fetch` reads the rows of at most
 * `limit` keys. A row that changed after the listing's snapshot (or between scan and fetch) is left
 * out: it was listed before in its old place, or counts as changed while paging.
 */
export async function listByKeyset(
  query: TimerListQuery,
  scan: (scanLimit: number) => Promise<readonly ScannedKey[]> | readonly ScannedKey[],
  fetch: (serviceCallIds: readonly string[]) => Promise<readonly TimerRecord[]> | readonly TimerRecord[],
): Promise<TimerPage> {
  const snapshotMs = query.after?.snapshotMs ?? query.nowMs;
  const scanLimit = scanLimitOf(query);
  const scanned = await scan(scanLimit);
  const prefix = query.serviceCallIdPrefix;
  const matching = prefix === undefined ? scanned : scanned.filter((key) => key.serviceCallId.startsWith(prefix));
  const rowFilter = rowFilterOf(query);
  if (rowFilter !== undefined) return filteredPage(query, snapshotMs, scanned, scanLimit, matching, rowFilter, fetch);
  let page: readonly ScannedKey[];
  let last: ScannedKey | undefined;
  if (matching.length > query.limit) {
    page = matching.slice(0, query.limit);
    last = page[page.length - 1];
  } else {
    page = matching;
    last = scanned.length === scanLimit ? scanned[scanned.length - 1] : undefined;
  }
  const rows = page.length === 0 ? [] : await fetch(page.map((key) => key.serviceCallId));
  const byId = new Map(rows.map((row) => [row.serviceCallId, row]));
  const timers: TimerRecord[] = [];
  for (const key of page) {
    const row = byId.get(key.serviceCallId);
    if (row !== undefined && row.state === key.state && row.dueAtMs === key.dueAtMs && row.updatedAtMs <= snapshotMs) timers.push(row);
  }
  const next: ListPosition | null = last === undefined ? null : { snapshotMs, dueAtMs: last.dueAtMs, serviceCallId: last.serviceCallId };
  return { timers, next };
}

/** A page whose filters need the rows: every matching scanned key's row is read (at most the scan budget). */
async function filteredPage(
  query: TimerListQuery,
  snapshotMs: number,
  scanned: readonly ScannedKey[],
  scanLimit: number,
  matching: readonly ScannedKey[],
  rowFilter: (row: TimerRecord) => boolean,
  fetch: (serviceCallIds: readonly string[]) => Promise<readonly TimerRecord[]> | readonly TimerRecord[],
): Promise<TimerPage> {
  const rows = matching.length === 0 ? [] : await fetch(matching.map((key) => key.serviceCallId));
  const byId = new Map(rows.map((row) => [row.serviceCallId, row]));
  const timers: TimerRecord[] = [];
  let last: ScannedKey | undefined;
  for (const key of matching) {
    const row = byId.get(key.serviceCallId);
    if (row === undefined || row.state !== key.state || row.dueAtMs !== key.dueAtMs || row.updatedAtMs > snapshotMs || !rowFilter(row))
      continue;
    if (timers.length === query.limit) {
      last = { state: key.state, dueAtMs: timers[timers.length - 1]!.dueAtMs!, serviceCallId: timers[timers.length - 1]!.serviceCallId };
      break;
    }
    timers.push(row);
  }
  if (last === undefined && scanned.length === scanLimit) last = scanned[scanned.length - 1];
  const next: ListPosition | null = last === undefined ? null : { snapshotMs, dueAtMs: last.dueAtMs, serviceCallId: last.serviceCallId };
  return { timers, next };
}
