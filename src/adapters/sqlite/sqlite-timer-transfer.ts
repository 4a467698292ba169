import { existsSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import type { ImportCounts, TimerTransfer, TransferRecord } from "../../app/transfer/timer-transfer.js";
import type { Timer } from "../../domain/timer.js";
import { historyEntryTexts } from "../../domain/timer-history.js";
import { timerColumnValues, timerSelectList } from "../storage/timer-columns.js";
import { PREFIX_CANCEL_SELECT, timerFromRow, type TransferPrefixCancelRow, type TransferTimerRow } from "../storage/transfer-rows.js";
import { prepareTimerStatements, type SqliteTimerStatements } from "./sqlite-timer-statements.js";
import { openSqliteConnection } from "./sqlite-connection.js";
import { BatchTallies, type TalliedRow } from "./batch-tallies.js";
import { DEFAULT_MIGRATIONS_FOLDER } from "./sqlite-timer-store.js";
import { SQLITE_HISTORY_COLUMN, SqliteTimerHistory } from "./sqlite-timer-history.js";

/** A running service holds the write lock for one short transaction at a time: wait that out. */
const BUSY_TIMEOUT_MS = 10_000;

export interface SqliteTimerTransferOptions {
  /** The store's file (TIMER_DB_PATH). */
  readonly path: string;
  /** An export needs the file; an import creates it (and its folder) when missing. */
  readonly create: boolean;
  readonly migrationsFolder?: string;
}

/**
 * Export and import on a SQLite file (CONTRACT §18), on a connection of its own: an export may run
 * beside the service (WAL: one read transaction is one snapshot however long the writer goes on);
 * an import writes as the service would, and keeps `timer_state_counts` and `timer_due_tenants` in
 * step as the service's writer does (BatchTallies, in each batch's transaction).
 */
export function openSqliteTimerTransfer(options: SqliteTimerTransferOptions): SqliteTimerTransfer {
  if (!options.create && !existsSync(options.path)) throw new Error(`no SQLite store at ${options.path} (TIMER_DB_PATH)`);
  mkdirSync(dirname(options.path), { recursive: true });
  // The service's connection settings, with a longer wait for the write lock.
  const db = openSqliteConnection(options.path, { busyTimeoutMs: BUSY_TIMEOUT_MS });
  try {
    // As at service start: a file of an older release gets this release's columns first.
    migrate(drizzle({ client: db }), { migrationsFolder: options.migrationsFolder ?? DEFAULT_MIGRATIONS_FOLDER });
    return new SqliteTimerTransfer(db);
  } catch (error) {
    db.close();
    throw error;
  }
}

export class SqliteTimerTransfer implements TimerTransfer {
  readonly kind = "sqlite";
  readonly #db: Database.Database;
  /** Every timer's row, or one tenant's, without and with its history. */
  readonly #timers: Readonly<
    Record<"all" | "tenant" | "allWithHistory" | "tenantWithHistory", Database.Statement<unknown[], TransferTimerRow>>
  >;
  readonly #allPrefixCancels: Database.Statement<[], TransferPrefixCancelRow>;
  readonly #tenantPrefixCancels: Database.Statement<[string], TransferPrefixCancelRow>;
  readonly #storedTimer: Database.Statement<[string, string], TalliedRow & { commandTs: number }>;
  readonly #tallies: BatchTallies;
  readonly #history: SqliteTimerHistory;
  /** The store's own write statements: an import writes as the service does. */
  readonly #sql: SqliteTimerStatements;

  constructor(db: Database.Database) {
    this.#db = db;
    const timers = `SELECT ${timerSelectList({ quote: false })} FROM timer_schedules`;
    const withHistory = `SELECT ${timerSelectList({ quote: false })}, ${SQLITE_HISTORY_COLUMN} FROM timer_schedules`;
    // Key order is the primary key's (WITHOUT ROWID: the table is that b-tree), code points as in Postgres' "C".
    const ordered = "ORDER BY tenant_id, service_call_id";
    this.#timers = {
      all: db.prepare(`${timers} ${ordered}`),
      tenant: db.prepare(`${timers} WHERE tenant_id = ? ${ordered}`),
      allWithHistory: db.prepare(`${withHistory} ${ordered}`),
      tenantWithHistory: db.prepare(`${withHistory} WHERE tenant_id = ? ${ordered}`),
    };
    const prefixCancels = `SELECT ${PREFIX_CANCEL_SELECT(false)} FROM timer_prefix_cancels`;
    this.#allPrefixCancels = db.prepare(`${prefixCancels} ORDER BY tenant_id, service_call_id_prefix`);
    this.#tenantPrefixCancels = db.prepare(`${prefixCancels} WHERE tenant_id = ? ORDER BY tenant_id, service_call_id_prefix`);
    this.#storedTimer = db.prepare(`
      SELECT command_ts AS commandTs, tenant_id AS tenantId, state, fired_at AS firedAtMs, completed_at AS completedAtMs
      FROM timer_schedules WHERE tenant_id = ? AND service_call_id = ?`);
    this.#tallies = new BatchTallies(db);
    this.#sql = prepareTimerStatements(db);
    this.#history = new SqliteTimerHistory(db);
  }

  async *exportRecords(options: { readonly tenantId?: string; readonly history?: boolean }): AsyncIterable<TransferRecord> {
    const tenantId = options.tenantId;
    const history = options.history === true;
    // One deferred read transaction: its first SELECT fixes the snapshot both tables are read from.
    this.#db.exec("BEGIN");
    try {
      const timers =
        tenantId === undefined
          ? this.#timers[history ? "allWithHistory" : "all"].iterate()
          : this.#timers[history ? "tenantWithHistory" : "tenant"].iterate(tenantId);
      for (const row of timers) yield { kind: "timer", timer: timerFromRow(row) };
      const cancels = tenantId === undefined ? this.#allPrefixCancels.iterate() : this.#tenantPrefixCancels.iterate(tenantId);
      for (const row of cancels) yield { kind: "prefixCancel", prefixCancel: { ...row } };
    } finally {
      if (this.#db.inTransaction) this.#db.exec("COMMIT");
    }
  }

  async importBatch(records: readonly TransferRecord[]): Promise<ImportCounts> {
    const replacedOf = new Set<string>();
    const importAll = this.#tallies.around(() => {
      const timers = { created: 0, replaced: 0, kept: 0 };
      const prefixCancels = { created: 0, replaced: 0, kept: 0 };
      for (const record of records) {
        if (record.kind === "timer") {
          const outcome = this.#importTimer(record.timer);
          timers[outcome]++;
          if (outcome === "replaced") replacedOf.add(record.timer.tenantId);
        } else {
          const { tenantId, serviceCallIdPrefix, commandTs, recordedAtMs } = record.prefixCancel;
          const stored = this.#sql.selectPrefixCancel.get({ tenantId, serviceCallIdPrefix });
          if (stored !== undefined && stored.commandTs >= commandTs) prefixCancels.kept++;
          else {
            // Its sweep (re)starts at the beginning of the prefix and cancels what it covers here.
            this.#sql.upsertPrefixCancel.run({ tenantId, serviceCallIdPrefix, commandTs, nowMs: recordedAtMs });
            prefixCancels[stored === undefined ? "created" : "replaced"]++;
          }
        }
      }
      return { ...timers, prefixCancels };
    });
    const write = this.#db.transaction(() => {
      const counts = importAll();
      // A replaced timer may have been its tenant's earliest Scheduled one; raised after the tallies
      // are written, since they only lower an entry (a key twice in one batch lowered it for its first line).
      this.#sql.raiseEarliest(replacedOf);
      return counts;
    });
    // IMMEDIATE: the write lock is taken before the first read, so no reader-to-writer upgrade can fail busy.
    return write.immediate();
  }

  #importTimer(timer: Timer): "created" | "replaced" | "kept" {
    const stored = this.#storedTimer.get(timer.tenantId, timer.serviceCallId);
    if (stored !== undefined && stored.commandTs >= timer.commandTs) return "kept";
    (stored === undefined ? this.#sql.insertNew : this.#sql.upsert).run(timerColumnValues(timer));
    this.#history.replace(timer.tenantId, timer.serviceCallId, historyEntryTexts(timer.history));
    this.#tallies.changed(stored, timer);
    return stored === undefined ? "created" : "replaced";
  }

  async close(): Promise<void> {
    this.#db.close();
  }
}
