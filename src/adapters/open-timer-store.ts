import type { TimerServiceConfig } from "../config.js";
import type { Logger } from "../app/logger.js";
import type { TimerStore } from "../app/timer-store.js";
import { openSqliteTimerStore } from "./sqlite/sqlite-timer-store.js";

const WAL_CHECKPOINT_INTERVAL_MS = 1_000;
const SQLITE_BUSY_TIMEOUT_MS = 100;

/** Opens (and migrates) the store that TIMER_STORE names. */
export async function openTimerStore(config: TimerServiceConfig, logger: Logger): Promise<TimerStore> {
  return openSqliteTimerStore({
    path: config.dbPath,
    synchronous: config.dbSynchronous,
    // better-sqlite3 waits for a lock on the only thread: a long wait would freeze HTTP and the
    // broker connection. Short, and the nak-and-redeliver retry does the waiting instead.
    busyTimeoutMs: SQLITE_BUSY_TIMEOUT_MS,
    backgroundCheckpoint: { intervalMs: WAL_CHECKPOINT_INTERVAL_MS, onError: (message) => logger.warn({ error: message }, "WAL checkpoint failed") },
  });
}
