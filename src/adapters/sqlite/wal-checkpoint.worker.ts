import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { PeriodicLoop } from "../../app/periodic-loop.js";
import { systemClock } from "../clock/system-clock.js";

/**
 * Runs in a worker thread with a connection of its own: copies the write-ahead log back into the
 * database file (PASSIVE: never blocks the service's writes), so the event-loop thread does not pay
 * for checkpoints inside its commits.
 */
const { path, intervalMs } = workerData as { path: string; intervalMs: number };
const db = new Database(path);
db.pragma("busy_timeout = 1000");

// The loop is what keeps this thread alive until the service closes it.
const checkpoints = new PeriodicLoop(systemClock, intervalMs, () => void db.pragma("wal_checkpoint(PASSIVE)"), {
  holdsProcess: true,
  onError: (error) => parentPort?.postMessage({ error: String(error) }),
});
checkpoints.start();

parentPort?.on("message", (message) => {
  if (message !== "close") return;
  void checkpoints.stop().then(() => {
    db.close();
    parentPort?.close();
  });
});
