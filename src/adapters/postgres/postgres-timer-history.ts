import type pg from "pg";
import type { HistoryWrite } from "../../app/command-batch.js";
import { timerKeyString, type Timer, type TimerKey } from "../../domain/timer.js";
import { historyEntryTexts, type HistoryAppend } from "../../domain/timer-history.js";

/**
 * Timers' histories (CONTRACT §19) in `timer_history`, one row per entry, `seq` counting a timer's
 * entries from 1. Every writer appends in the transaction that holds the timer's row lock, in a
 * statement started after it took the lock: under READ COMMITTED that statement's snapshot sees
 * every append committed before, so the timer's last `seq` read there is the last one.
 */

/** A timer row's history (row alias `t`) as the text of a JSON array, oldest first; null when it has none. */
export const HISTORY_COLUMN = `(SELECT '[' || string_agg(h.entry, ',' ORDER BY h.seq) || ']' FROM timer_history h
  WHERE h.tenant_id = t.tenant_id AND h.service_call_id = t.service_call_id) AS history`;

/**
 * Appends the entries $3 to the histories of the timers $1 tenants, $2 serviceCallIds (in array
 * order), keeping each timer's last $4. One statement per batch: the entries a timer's newest $4
 * leave out are never inserted, so the DELETE, which cannot see the rows its CTE inserts, only has
 * to drop older rows.
 */
export const APPEND_HISTORY = `
  WITH input AS (
    SELECT tenant_id, service_call_id, entry,
      row_number() OVER (PARTITION BY tenant_id, service_call_id ORDER BY ord) AS n,
      count(*) OVER (PARTITION BY tenant_id, service_call_id) AS entries
    FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS i(tenant_id, service_call_id, entry, ord)
  ), appended AS (
    INSERT INTO timer_history (tenant_id, service_call_id, seq, entry)
    SELECT i.tenant_id, i.service_call_id, i.n + coalesce(
        (SELECT max(h.seq) FROM timer_history h WHERE h.tenant_id = i.tenant_id AND h.service_call_id = i.service_call_id), 0),
      i.entry
    FROM input i WHERE i.n > i.entries - $4::integer
    RETURNING tenant_id, service_call_id, seq
  )
  DELETE FROM timer_history h
  USING (SELECT tenant_id, service_call_id, max(seq) AS newest FROM appended GROUP BY tenant_id, service_call_id) a
  WHERE h.tenant_id = a.tenant_id AND h.service_call_id = a.service_call_id AND h.seq <= a.newest - $4::integer`;

/** Deletes the histories of the timers $1 tenants, $2 serviceCallIds. */
export const DELETE_HISTORIES = `
  DELETE FROM timer_history h
  USING unnest($1::text[], $2::text[]) AS k(tenant_id, service_call_id)
  WHERE h.tenant_id = k.tenant_id AND h.service_call_id = k.service_call_id`;

/** Inserts entries as they are: $1 tenants, $2 serviceCallIds, $3 seqs, $4 entries. */
const INSERT_HISTORIES = `
  INSERT INTO timer_history (tenant_id, service_call_id, seq, entry)
  SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[])`;

/** Appends `writes` (in order) to their timers' histories, keeping each timer's last `keep`. */
export async function appendHistory(client: pg.ClientBase, writes: readonly HistoryWrite[], keep: number): Promise<void> {
  if (writes.length === 0 || keep <= 0) return;
  await client.query({
    name: "timer-append-history",
    text: APPEND_HISTORY,
    values: [writes.map((w) => w.tenantId), writes.map((w) => w.serviceCallId), writes.map((w) => w.entry), keep],
  });
}

/**
 * Appends the entries of the firings or deadlines whose update went through (`recorded`, as
 * timerKeyString); one statement per bound kept, in practice one.
 */
export async function appendRecorded(
  client: pg.ClientBase,
  records: readonly (TimerKey & { readonly history?: HistoryAppend | undefined })[],
  recorded: ReadonlySet<string>,
): Promise<void> {
  const byKeep = new Map<number, HistoryWrite[]>();
  // One entry per updated row: a key twice in one call was updated once.
  const pending = new Set(recorded);
  for (const { tenantId, serviceCallId, history } of records) {
    if (history === undefined || !pending.delete(timerKeyString({ tenantId, serviceCallId }))) continue;
    const writes = byKeep.get(history.keep) ?? [];
    writes.push({ tenantId, serviceCallId, entry: history.entry });
    byKeep.set(history.keep, writes);
  }
  for (const [keep, writes] of byKeep) await appendHistory(client, writes, keep);
}

/** Replaces the histories of `timers` with the entries each carries (an import); none: the timer has none. */
export async function replaceHistories(client: pg.ClientBase, timers: readonly Timer[]): Promise<void> {
  if (timers.length === 0) return;
  await deleteHistories(client, timers);
  const rows: { tenantId: string; serviceCallId: string; seq: number; entry: string }[] = [];
  for (const { tenantId, serviceCallId, history } of timers) {
    historyEntryTexts(history).forEach((entry, i) => rows.push({ tenantId, serviceCallId, seq: i + 1, entry }));
  }
  if (rows.length === 0) return;
  await client.query(INSERT_HISTORIES, [
    rows.map((r) => r.tenantId),
    rows.map((r) => r.serviceCallId),
    rows.map((r) => r.seq),
    rows.map((r) => r.entry),
  ]);
}

/** Deletes the histories of `keys` (timers deleted or replaced). */
export async function deleteHistories(client: pg.ClientBase, keys: readonly TimerKey[]): Promise<void> {
  if (keys.length === 0) return;
  await client.query({
    name: "timer-delete-histories",
    text: DELETE_HISTORIES,
    values: [keys.map((k) => k.tenantId), keys.map((k) => k.serviceCallId)],
  });
}
