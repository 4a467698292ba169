import type { TimerServiceConfig } from "../config/config.js";
import type { Logger } from "../app/logger.js";
import type { Storage } from "../app/storage.js";
import type { Clock } from "../app/clock.js";

/**
 * The storage factory: opens (and migrates) the store TIMER_STORE names, with its queries and
 * retention. The one place that knows every store; each is loaded only when chosen.
 */
export async function openStorage(config: TimerServiceConfig, logger: Logger, clock: Clock): Promise<Storage> {
  const { store, databaseUrl, databaseSchema, databaseTimeoutMs } = config.storage;
  switch (store) {
    case "postgres": {
      // config.ts requires the URL with postgres; it is never logged (it may hold a password).
      if (databaseUrl === undefined) throw new Error("TIMER_DATABASE_URL is required with TIMER_STORE=postgres");
      const { openPostgresStorage } = await import("./postgres/postgres-storage.js");
      return openPostgresStorage({
        url: databaseUrl,
        schema: databaseSchema,
        timeoutMs: databaseTimeoutMs,
        clock,
        onIdleError: (error, pool) =>
          logger.warn({ error: error.message, schema: databaseSchema, pool }, "Postgres connection lost; the pool reconnects"),
      });
    }
    case "sqlite": {
      const { openSqliteStorage } = await import("./sqlite/sqlite-storage.js");
      return openSqliteStorage({
        path: config.dbPath,
        synchronous: config.dbSynchronous,
        timeoutMs: databaseTimeoutMs,
        clock,
        onCheckpointError: (message) => logger.warn({ error: message }, "WAL checkpoint failed"),
      });
    }
  }
}
