import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";

/**
 * Runs in a worker thread with a connection of its own: copies the write-ahead log back into the
 * database file (PASSIVE: never blocks the service's writes), so the event-loop thread does not pay
 * for checkpoints inside its commits.
 */
const { path, intervalMs } = workerData as { path: string; intervalMs: number };
const db = new Database(path);
db.pragma("busy_timeout = 1000");

const timer = setInterval(() => {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch (error) {
    parentPort?.postMessage({ error: String(error) });
  }
}, intervalMs);

parentPort?.on("message", (message) => {
  if (message !== "close") return;
  clearInterval(timer);
  db.close();
  parentPort?.close();
});
