import Database from "better-sqlite3";

/** The connection settings every connection of the service's file shares. */
export interface SqliteConnectionOptions {
  readonly synchronous?: "NORMAL" | "FULL";
  readonly busyTimeoutMs?: number;
  /**
   * The WAL size (pages) at which a commit of this connection checkpoints; SQLite's default (1000)
   * when absent. Raised where a background checkpointer does the work (a safety net only).
   */
  readonly walAutocheckpointPages?: number;
}

/**
 * With background checkpoints the writer's own auto-checkpoint stays as a safety net only, should
 * the worker fall behind or die: at 50,000 pages (~200 MB of WAL).
 */
export const SAFETY_NET_AUTOCHECKPOINT_PAGES = 50_000;

/** Opens a connection to the timer database at `path` with the service's settings; no migration. */
export function openSqliteConnection(path: string, options: SqliteConnectionOptions): Database.Database {
  const db = new Database(path);
  try {
    db.pragma("journal_mode = WAL");
    db.pragma(`synchronous = ${options.synchronous ?? "FULL"}`);
    db.pragma(`busy_timeout = ${Math.trunc(options.busyTimeoutMs ?? 5000)}`);
    // 32 MB of page cache: fewer page reads when commands land at random places of a large table.
    db.pragma("cache_size = -32768");
    if (options.walAutocheckpointPages !== undefined) db.pragma(`wal_autocheckpoint = ${Math.trunc(options.walAutocheckpointPages)}`);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}
