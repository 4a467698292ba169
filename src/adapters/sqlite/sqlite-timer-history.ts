import type Database from "better-sqlite3";
import type { TimerKey } from "../../domain/timer.js";

/**
 * Timers' histories (CONTRACT §19) in `timer_history`: a log, one row per entry. Its rowid grows with
 * every entry, so a new entry is written at the table's end whatever its timer, and only the index by
 * timer key takes a write among the timer's other entries (which it also orders, by rowid). A timer
 * gives up its oldest entry beyond the last `keep` in the transaction that appends.
 */

/** A timer row's history as the text of a JSON array, oldest first; null when it has none (row alias `timer_schedules`). */
export const SQLITE_HISTORY_COLUMN = `(SELECT '[' || group_concat(h.entry, ',' ORDER BY h.id) || ']' FROM timer_history h
  WHERE h.tenant_id = timer_schedules.tenant_id AND h.service_call_id = timer_schedules.service_call_id) AS history`;

/** The statements, exported for the EXPLAIN QUERY PLAN checks of the tests. */
export const SQLITE_HISTORY_SQL = {
  insert: "INSERT INTO timer_history (tenant_id, service_call_id, entry) VALUES (?, ?, ?)",
  // A bound OFFSET re-prepares the statement at every new value unless hidden from the planner (`+?`).
  trim: `DELETE FROM timer_history WHERE id IN (
    SELECT id FROM timer_history WHERE tenant_id = ? AND service_call_id = ? ORDER BY id DESC LIMIT -1 OFFSET +?)`,
  dropAll: "DELETE FROM timer_history WHERE tenant_id = ? AND service_call_id = ?",
} as const;

export class SqliteTimerHistory {
  readonly #insert: Database.Statement<[string, string, string]>;
  readonly #trim: Database.Statement<[string, string, number]>;
  readonly #dropAll: Database.Statement<[string, string]>;

  constructor(db: Database.Database) {
    this.#insert = db.prepare(SQLITE_HISTORY_SQL.insert);
    this.#trim = db.prepare(SQLITE_HISTORY_SQL.trim);
    this.#dropAll = db.prepare(SQLITE_HISTORY_SQL.dropAll);
  }

  /**
   * Appends `entries` (in order) to their timers' histories, each keeping its last `keep`. Inside a
   * write transaction. `isNew(key)`: the timer was not stored before the transaction, so it had no
   * history, and nothing falls out until it has more than `keep`.
   */
  append(entries: readonly (TimerKey & { readonly entry: string })[], keep: number, isNew?: (key: TimerKey) => boolean): void {
    // All inserted first, in order: their rowids keep each timer's order.
    for (const { tenantId, serviceCallId, entry } of entries) this.#insert.run(tenantId, serviceCallId, entry);
    // Then each timer that may hold more than `keep` gives up its oldest, once however many it gained.
    const gained = new Map<string, { key: TimerKey; count: number }>();
    for (const key of entries) {
      const id = `${key.tenantId}\u0000${key.serviceCallId}`;
      const seen = gained.get(id);
      if (seen === undefined) gained.set(id, { key, count: 1 });
      else seen.count++;
    }
    for (const { key, count } of gained.values()) {
      if (count > keep || isNew?.(key) !== true) this.#trim.run(key.tenantId, key.serviceCallId, keep);
    }
  }

  /** Appends one entry to a stored timer's history, keeping its last `keep`. Inside a write transaction. */
  appendOne(tenantId: string, serviceCallId: string, entry: string, keep: number): void {
    this.#insert.run(tenantId, serviceCallId, entry);
    this.#trim.run(tenantId, serviceCallId, keep);
  }

  /** Replaces the timer's history with `entries` (JSON texts, oldest first): an import. */
  replace(tenantId: string, serviceCallId: string, entries: readonly string[]): void {
    this.#dropAll.run(tenantId, serviceCallId);
    for (const entry of entries) this.#insert.run(tenantId, serviceCallId, entry);
  }

  /** Deletes the histories of timers deleted (retention). */
  deleteOf(keys: readonly TimerKey[]): void {
    for (const { tenantId, serviceCallId } of keys) this.#dropAll.run(tenantId, serviceCallId);
  }
}
