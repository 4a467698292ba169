import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync, statSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";

/** A running service holds the write lock for one short transaction at a time: wait that out. */
const BUSY_TIMEOUT_MS = 10_000;

export interface SqliteBackup {
  readonly path: string;
  readonly bytes: number;
  readonly timers: number;
  readonly prefixCancels: number;
}

/**
 * Copies the SQLite store at `source` into a new file `out` while the service may be writing it
 * (CONTRACT §18). `VACUUM INTO` reads one snapshot in one read transaction, so the copy is consistent
 * however long it takes and the writer is never blocked; the online backup API was not used because
 * it starts over whenever another connection writes, which under steady commands it may never finish.
 * The copy is written beside `out`, checked (`quick_check`), made durable, then renamed into place:
 * `out` is either absent or a whole, checked database. It keeps the store's id, so the service
 * started on it takes its broker lease as a restart on the original would.
 */
export function backupSqliteStore(source: string, out: string): SqliteBackup {
  if (!existsSync(source)) throw new Error(`no SQLite store at ${source} (TIMER_DB_PATH)`);
  if (existsSync(out)) throw new Error(`${out} exists; remove it or name another file`);
  const partial = `${out}.partial-${process.pid}`;
  rmSync(partial, { force: true });
  const db = new Database(source, { fileMustExist: true });
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.prepare("VACUUM INTO ?").run(partial);
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  } finally {
    db.close();
  }
  try {
    const summary = checkCopy(partial);
    syncFile(partial);
    renameSync(partial, out);
    syncFile(dirname(out));
    return { path: out, bytes: statSync(out).size, ...summary };
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  }
}

/** Opens the copy as the service would read it and counts what it holds; throws when it is damaged. */
function checkCopy(path: string): { timers: number; prefixCancels: number } {
  const copy = new Database(path, { fileMustExist: true });
  try {
    const result = copy.pragma("quick_check", { simple: true });
    if (result !== "ok") throw new Error(`the copy failed SQLite's quick_check: ${String(result)}`);
    const count = (table: string) => (copy.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    return { timers: count("timer_schedules"), prefixCancels: count("timer_prefix_cancels") };
  } finally {
    copy.close();
  }
}

function syncFile(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
