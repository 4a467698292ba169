import type { TimerServiceConfig } from "../config/config.js";
import type { StoreKind } from "../config/storage-config.js";
import type { Logger } from "../app/logger.js";
import type { Storage } from "../app/storage.js";
import type { Clock } from "../app/clock.js";
import type { TimerTransfer } from "../app/transfer/timer-transfer.js";

/** What the service and the CLI need of one store; each store's code is loaded only when chosen. */
export interface StoreDescriptor {
  /** Where the store is, for messages: the SQLite file or the Postgres schema, never the database URL. */
  label(config: TimerServiceConfig): string;
  /** Opens and migrates the store with its queries and retention; a Postgres that does not answer yet is waited for. */
  open(config: TimerServiceConfig, logger: Logger, clock: Clock): Promise<Storage>;
  /**
   * The export/import adapter (CONTRACT §18), migrated as the service migrates at start. `create`:
   * an import may start a SQLite file; an export needs one.
   */
  openTransfer(config: TimerServiceConfig, options: { readonly create: boolean }): Promise<TimerTransfer>;
}

/** config.ts requires the URL with postgres; it is logged only redacted (it may hold a password). */
function databaseUrlOf(config: TimerServiceConfig): string {
  const { databaseUrl } = config.storage;
  if (databaseUrl === undefined) throw new Error("TIMER_DATABASE_URL is required with TIMER_STORE=postgres");
  return databaseUrl;
}

/** The one place that knows every store TIMER_STORE may name. */
const STORES: Readonly<Record<StoreKind, StoreDescriptor>> = {
  sqlite: {
    label: (config) => `sqlite ${config.dbPath}`,
    async open(config, logger, clock) {
      const { openSqliteStorage } = await import("./sqlite/sqlite-storage.js");
      return openSqliteStorage({
        path: config.dbPath,
        synchronous: config.dbSynchronous,
        timeoutMs: config.storage.databaseTimeoutMs,
        clock,
        onCheckpointError: (message) => logger.warn({ error: message }, "WAL checkpoint failed"),
      });
    },
    async openTransfer(config, options) {
      const { openSqliteTimerTransfer } = await import("./sqlite/sqlite-timer-transfer.js");
      return openSqliteTimerTransfer({ path: config.dbPath, create: options.create });
    },
  },
  postgres: {
    label: (config) => `postgres schema ${config.storage.databaseSchema}`,
    async open(config, logger, clock) {
      const { databaseSchema: schema, databaseTimeoutMs: timeoutMs } = config.storage;
      const url = databaseUrlOf(config);
      const { waitUntilPostgresAnswers } = await import("./postgres/postgres-availability.js");
      await waitUntilPostgresAnswers({ url, timeoutMs, logger });
      const { openPostgresStorage } = await import("./postgres/postgres-storage.js");
      return openPostgresStorage({
        url,
        schema,
        timeoutMs,
        clock,
        onIdleError: (error, pool) => logger.warn({ error: error.message, schema, pool }, "Postgres connection lost; the pool reconnects"),
      });
    },
    async openTransfer(config) {
      const { openPostgresTimerTransfer } = await import("./postgres/postgres-timer-transfer.js");
      const { databaseSchema: schema, databaseTimeoutMs: timeoutMs } = config.storage;
      return openPostgresTimerTransfer({ url: databaseUrlOf(config), schema, timeoutMs });
    },
  },
};

/** The descriptor of the store TIMER_STORE names. */
export function storeOf(config: TimerServiceConfig): StoreDescriptor {
  return STORES[config.storage.store];
}

/** The storage factory: opens (and migrates) the store TIMER_STORE names, with its queries and retention. */
export function openStorage(config: TimerServiceConfig, logger: Logger, clock: Clock): Promise<Storage> {
  return storeOf(config).open(config, logger, clock);
}
