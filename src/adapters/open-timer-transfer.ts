import type { TimerServiceConfig } from "../config/config.js";
import type { TimerTransfer } from "../app/transfer/timer-transfer.js";

/**
 * Opens the export/import adapter of the store TIMER_STORE names (CONTRACT §18), from the
 * service's own configuration, migrated as the service migrates at start. `create`: an import may
 * start a SQLite file; an export needs one.
 */
export async function openTimerTransfer(config: TimerServiceConfig, options: { readonly create: boolean }): Promise<TimerTransfer> {
  const { store, databaseUrl, databaseSchema, databaseTimeoutMs } = config.storage;
  switch (store) {
    case "postgres": {
      if (databaseUrl === undefined) throw new Error("TIMER_DATABASE_URL is required with TIMER_STORE=postgres");
      const { openPostgresTimerTransfer } = await import("./postgres/postgres-timer-transfer.js");
      return openPostgresTimerTransfer({ url: databaseUrl, schema: databaseSchema, timeoutMs: databaseTimeoutMs });
    }
    case "sqlite": {
      const { openSqliteTimerTransfer } = await import("./sqlite/sqlite-timer-transfer.js");
      return openSqliteTimerTransfer({ path: config.dbPath, create: options.create });
    }
  }
}
