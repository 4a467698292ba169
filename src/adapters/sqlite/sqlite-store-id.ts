import type Database from "better-sqlite3";

/** The database's own random id (made by migration 0007): what the broker lease names (CONTRACT §6). */
export function readSqliteStoreId(db: Database.Database): string {
  const row = db.prepare("SELECT value FROM timer_store_meta WHERE key = 'store_id'").get() as { value: string } | undefined;
  if (row === undefined) throw new Error("timer_store_meta has no store_id: the database was not migrated");
  return row.value;
}
