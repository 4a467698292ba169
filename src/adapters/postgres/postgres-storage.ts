import type { Storage } from "../../app/storage.js";
import type { Clock } from "../../app/clock.js";
import { healthCheckIntervalMs } from "../storage/health-check-interval.js";
import { createPostgresPool } from "./postgres-pool.js";
import { openPostgresTimerStore } from "./postgres-timer-store.js";
import { PostgresTimerQueries } from "./postgres-timer-queries.js";
import { PostgresTimerRetention } from "./postgres-timer-retention.js";

/** Connections of the queries' own pool: queries never wait behind firing, nor firing behind them. */
const QUERY_POOL_CONNECTIONS = 2;

export interface PostgresStorageOptions {
  /** Never logged: it may hold a password. */
  readonly url: string;
  readonly schema: string;
  readonly timeoutMs: number;
  readonly clock: Clock;
  /** An idle pooled connection failed; the pool replaces it. */
  readonly onIdleError: (error: Error, pool: "store" | "queries") => void;
}

/** One Postgres schema shared by any number of instances; queries and retention on a pool of their own. */
export async function openPostgresStorage(options: PostgresStorageOptions): Promise<Storage> {
  const store = await openPostgresTimerStore({
    url: options.url,
    schema: options.schema,
    timeoutMs: options.timeoutMs,
    clock: options.clock,
    healthProbe: { intervalMs: healthCheckIntervalMs(options.timeoutMs) },
    onIdleError: (error) => options.onIdleError(error, "store"),
  });
  const queryPool = createPostgresPool({
    url: options.url,
    schema: options.schema,
    maxConnections: QUERY_POOL_CONNECTIONS,
    timeoutMs: options.timeoutMs,
    onIdleError: (error) => options.onIdleError(error, "queries"),
  });
  return {
    kind: "postgres",
    store,
    queries: new PostgresTimerQueries(queryPool),
    retention: new PostgresTimerRetention(queryPool),
    shared: true,
    // As many as publish at once: more records in flight than that only waited for the pool's
    // connections (a burst took as long with 8 as with 32: docs/benchmarks.md).
    firingPollsInFlight: 8,
    async close() {
      await queryPool.end().catch(() => undefined);
      await store.close();
    },
  };
}
