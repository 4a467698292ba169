import type { TimerServiceConfig } from "../config/config.js";
import type { TimerTransfer } from "../app/transfer/timer-transfer.js";
import { storeOf } from "./open-storage.js";

/** An open export/import adapter and where its store is, for the CLI's messages. */
export interface OpenedTransfer {
  readonly transfer: TimerTransfer;
  /** The SQLite file or the Postgres schema; never the database URL. */
  readonly label: string;
}

/**
 * Opens the export/import adapter of the store TIMER_STORE names (CONTRACT §18) from the service's
 * own configuration, through the store's descriptor in the storage factory.
 */
export async function openTimerTransfer(config: TimerServiceConfig, options: { readonly create: boolean }): Promise<OpenedTransfer> {
  const store = storeOf(config);
  return { transfer: await store.openTransfer(config, options), label: store.label(config) };
}
