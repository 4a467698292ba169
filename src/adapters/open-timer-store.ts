import type { TimerServiceConfig } from "../config.js";
import type { Logger } from "../app/logger.js";
import type { TimerStore } from "../app/timer-store.js";
import { openPostgresTimerStore } from "./postgres/postgres-timer-store.js";
import { openSqliteTimerStore } from "./sqlite/sqlite-timer-store.js";

const WAL_CHECKPOINT_INTERVAL_MS = 1_000;
const SQLITE_BUSY_TIMEOUT_MS = 100;

/** Opens (and migrates) the store that TIMER_STORE names. */
export async function openTimerStore(config: TimerServiceConfig, logger: Logger): Promise<TimerStore> {
  const { store, databaseUrl, databaseSchema, databaseTimeoutMs } = config.storage;
  if (store === "postgres") {
    // config.ts requires the URL with postgres; it is never logged (it may hold a password).
    if (databaseUrl === undefined) throw new Error("TIMER_DATABASE_URL is required with TIMER_STORE=postgres");
    return openPostgresTimerStore({
      url: databaseUrl,
      schema: databaseSchema,
      timeoutMs: databaseTimeoutMs,
      healthProbe: { intervalMs: healthCheckIntervalMs(databaseTimeoutMs) },
      onIdleError: (error) =>
        logger.warn({ error: error.message, schema: databaseSchema }, "Postgres connection lost; the pool reconnects"),
    });
  }
  const sqlite = openSqliteTimerStore({
    path: config.dbPath,
    synchronous: config.dbSynchronous,
    // better-sqlite3 waits for a lock on the only thread: a long wait would freeze HTTP and the
    // broker connection. Short (far below TIMER_DATABASE_TIMEOUT_MS), and the nak-and-redeliver
    // retry does the waiting instead.
    busyTimeoutMs: SQLITE_BUSY_TIMEOUT_MS,
    backgroundCheckpoint: {
      intervalMs: WAL_CHECKPOINT_INTERVAL_MS,
      onError: (message) => logger.warn({ error: message }, "WAL checkpoint failed"),
    },
  });
  sqlite.startHealthProbe({ intervalMs: healthCheckIntervalMs(databaseTimeoutMs), timeoutMs: databaseTimeoutMs });
  return sqlite;
}

/**
 * Time between two health checks of the store: a store that stops answering fails a check within
 * this plus the time-out (readiness 503 within 2 × TIMER_DATABASE_TIMEOUT_MS), and one that
 * answers again passes within this (ready within 10 s, CONTRACT §16).
 */
function healthCheckIntervalMs(timeoutMs: number): number {
  return Math.min(timeoutMs / 2, 2_000);
}
