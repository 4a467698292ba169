import type Database from "better-sqlite3";
import type { DeadlineRecord, Firing } from "../../app/timer-store.js";
import type { TimerKey } from "../../domain/timer.js";
import { prefixUpperBound, type PrefixCancel } from "../../domain/prefix-cancel.js";
import { SqliteTimerRetention } from "./sqlite-timer-retention.js";
import { SqliteTimerStore } from "./sqlite-timer-store.js";
import { prepareTimerStatements, type PrefixCancelKey, type SqliteTimerStatements, type TimerRow } from "./sqlite-timer-statements.js";

/** A timer's column values in TIMER_COLUMNS order (timerColumnValues), as the upsert binds them. */
export type TimerColumnRow = readonly unknown[];

/** The next timers of a prefix cancel's sweep, read in the sweep's open transaction. */
export interface SweepRead {
  readonly commandTs: number;
  readonly rows: TimerRow[];
}

/**
 * Every write to the SQLite file, on one connection, for the writer thread (sqlite-writer.worker.ts).
 * A command batch and a sweep step are split at the decision, which the application makes on the
 * main thread: `begin…` opens the write transaction and reads what the decision needs, `commit…`
 * writes what was decided and commits, `rollback` gives up. Nothing else may run in between; the
 * worker's queue sees to that.
 */
export class SqliteWriter {
  readonly #db: Database.Database;
  readonly #sql: SqliteTimerStatements;
  readonly #store: SqliteTimerStore;
  readonly #retention: SqliteTimerRetention;

  constructor(db: Database.Database) {
    this.#db = db;
    this.#sql = prepareTimerStatements(db);
    this.#store = new SqliteTimerStore(db);
    this.#retention = new SqliteTimerRetention(db);
  }

  /** Opens the write transaction of a command batch and reads the current timer of each key. */
  beginCommands(keys: readonly TimerKey[]): (TimerRow | undefined)[] {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      return keys.map(({ tenantId, serviceCallId }) => this.#sql.selectByKey.get(tenantId, serviceCallId));
    } catch (error) {
      this.rollback();
      throw error;
    }
  }

  /** Writes the timers a command batch decided and the prefix cancels it accepted, and commits. */
  commitCommands(timers: readonly TimerColumnRow[], cancels: readonly PrefixCancel[], nowMs: number): void {
    this.#commit(() => {
      for (const values of timers) this.#sql.upsert.run(values as unknown[]);
      for (const cancel of cancels) this.#sql.upsertPrefixCancel.run({ ...cancel, nowMs });
    });
    for (const cancel of cancels) this.#store.prefixIndex.add(cancel);
  }

  /**
   * Opens the write transaction of a sweep step and reads the next `limit` timers of the prefix
   * after its progress; undefined (and no transaction) when the sweep is done or its cancel gone.
   */
  beginSweep(prefix: PrefixCancelKey, limit: number): SweepRead | undefined {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const record = this.#sql.selectPrefixCancel.get(prefix);
      if (record === undefined || record.progressKey === null) {
        this.rollback();
        return undefined;
      }
      const rows = this.#sql.sweepSelect(prefix.serviceCallIdPrefix, record.progressKey).all({
        tenantId: prefix.tenantId,
        from: record.progressKey === "" ? prefix.serviceCallIdPrefix : record.progressKey,
        upper: prefixUpperBound(prefix.serviceCallIdPrefix),
        limit,
      });
      return { commandTs: record.commandTs, rows };
    } catch (error) {
      this.rollback();
      throw error;
    }
  }

  /** Writes the timers a sweep step cancelled and where the next step starts, and commits. */
  commitSweep(prefix: PrefixCancelKey, timers: readonly TimerColumnRow[], progressKey: string | null): void {
    this.#commit(() => {
      for (const values of timers) this.#sql.upsert.run(values as unknown[]);
      this.#sql.updatePrefixProgress.run({ ...prefix, progressKey });
    });
  }

  rollback(): void {
    if (this.#db.inTransaction) this.#db.exec("ROLLBACK");
  }

  recordFirings(calls: readonly (readonly Firing[])[]): TimerKey[][] {
    return this.#store.recordFiringCalls(calls);
  }

  recordDeadlines(records: readonly DeadlineRecord[]): TimerKey[] {
    return this.#store.recordDeadlineRecords(records);
  }

  raiseDueTenants(tenantIds: readonly string[]): void {
    this.#store.raiseDueTenants(tenantIds);
  }

  deleteFinalTimers(cutoffMs: number, limit: number): number {
    return this.#retention.deleteFinalTimersNow(cutoffMs, limit);
  }

  deletePrefixCancels(cutoffMs: number, limit: number): number {
    return this.#retention.deletePrefixCancelsNow(cutoffMs, limit);
  }

  /** Takes the write lock and gives it back: fails while another process holds the file locked. */
  probe(): void {
    this.#db.exec("BEGIN IMMEDIATE");
    this.#db.exec("ROLLBACK");
  }

  close(): void {
    this.rollback();
    this.#db.close();
  }

  #commit(write: () => void): void {
    try {
      write();
      this.#db.exec("COMMIT");
    } catch (error) {
      this.rollback();
      throw error;
    }
  }
}
