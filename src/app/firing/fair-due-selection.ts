import type { DueCursor, TenantDuePosition } from "../timer-store.js";

/**
 * Fair firing (CONTRACT §12): which due timers one poll takes when several tenants have due timers.
 * Every store implements the same rule, so that one tenant's backlog cannot hold back another's:
 *
 * 1. Candidates: up to `limit` tenants with due timers, by their earliest due time (then tenant id).
 * 2. Of each candidate, its due timers oldest first (due time, then serviceCallId), at most
 *    `perTenantReadLimit(limit, candidates)`.
 * 3. Dealt round-robin: every candidate's first timer in candidate order, then every candidate's
 *    second, … until `limit` timers.
 *
 * One tenant alone gets the whole batch; with others due, each gets about `limit / candidates` and
 * what they leave goes to the tenants with more. Postgres reads each candidate's range in one
 * statement, at most `perTenantReadLimit` rows of it (so at most 4 × `limit` rows per poll); SQLite
 * reads each candidate's share and more only when the batch is short, which deals the same.
 */
export function perTenantReadLimit(limit: number, candidates: number): number {
  return Math.min(limit, Math.ceil(limit / Math.max(1, candidates)) * 4);
}

/** Step 3: deals the candidates' oldest-first lists round-robin, up to `limit` items. */
export function dealRoundRobin<T>(lists: readonly (readonly T[])[], limit: number): T[] {
  const dealt: T[] = [];
  for (let rank = 0; dealt.length < limit; rank++) {
    let any = false;
    for (const list of lists) {
      if (rank >= list.length) continue;
      any = true;
      dealt.push(list[rank]!);
      if (dealt.length === limit) return dealt;
    }
    if (!any) return dealt;
  }
  return dealt;
}

/**
 * The cursor of a chain after one more poll took `timers` (each tenant's oldest first, as a claim
 * returns them): each tenant's position moves to its last timer taken.
 */
export function advanceDueCursor(
  cursor: DueCursor | undefined,
  timers: readonly (TenantDuePosition & { readonly tenantId: string })[],
): DueCursor | undefined {
  if (timers.length === 0) return cursor;
  const next = new Map(cursor);
  for (const { tenantId, dueAtMs, serviceCallId } of timers) next.set(tenantId, { dueAtMs, serviceCallId });
  return next;
}
