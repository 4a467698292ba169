import type { Storage } from "../../app/storage.js";
import type { Clock } from "../../app/clock.js";
import { healthCheckIntervalMs } from "../storage/health-check-interval.js";
import { SqliteTimerQueries } from "./sqlite-timer-queries.js";
import { openSqliteTimerStore } from "./sqlite-timer-store.js";
import { readSqliteStoreId } from "./sqlite-store-id.js";

const WAL_CHECKPOINT_INTERVAL_MS = 1_000;
/**
 * better-sqlite3 waits for a lock on the writer thread, and every write queued behind it waits too.
 * Short (far below TIMER_DATABASE_TIMEOUT_MS); the nak-and-redeliver retry does the waiting instead.
 */
const SQLITE_BUSY_TIMEOUT_MS = 100;

export interface SqliteStorageOptions {
  readonly path: string;
  readonly synchronous: "NORMAL" | "FULL";
  readonly timeoutMs: number;
  readonly clock: Clock;
  readonly onCheckpointError: (message: string) => void;
}

/**
 * One SQLite file, one instance at a time: the store with its writes (retention's too) on the writer
 * thread, its reads and the queries on a connection of the main thread.
 */
export async function openSqliteStorage(options: SqliteStorageOptions): Promise<Storage> {
  const store = await openSqliteTimerStore({
    path: options.path,
    synchronous: options.synchronous,
    busyTimeoutMs: SQLITE_BUSY_TIMEOUT_MS,
    clock: options.clock,
    backgroundCheckpoint: { intervalMs: WAL_CHECKPOINT_INTERVAL_MS, onError: options.onCheckpointError },
  });
  store.startHealthProbe({ intervalMs: healthCheckIntervalMs(options.timeoutMs), timeoutMs: options.timeoutMs });
  return {
    kind: "sqlite",
    store,
    queries: new SqliteTimerQueries(store.database),
    retention: store.retention,
    // A SQLite file serves one instance: the service leases its consumer in the broker (CONTRACT §6).
    exclusive: { id: readSqliteStoreId(store.database), location: options.path },
    shared: false,
    close: () => store.close(),
  };
}
