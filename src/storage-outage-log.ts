import type { Logger } from "./app/logger.js";
import type { TimerStore } from "./app/timer-store.js";

/** How often storage health is looked at, and the least time between two warn lines. */
export const STORAGE_CHECK_INTERVAL_MS = 10_000;

/**
 * While the store cannot be written (a locked or full SQLite file, Postgres away), says so at warn
 * level once per interval with how long it has lasted, then once when it recovers. The failing
 * operations log their own errors; this line is the one an operator's log alert can key on.
 */
export function watchStorageOutage(store: TimerStore, logger: Logger, intervalMs = STORAGE_CHECK_INTERVAL_MS): () => void {
  let failingSinceMs: number | undefined;
  let checks = 0;
  const timer = setInterval(() => {
    if (store.isWritable()) {
      if (failingSinceMs !== undefined) logger.info({ outageMs: Date.now() - failingSinceMs }, "storage writable again");
      failingSinceMs = undefined;
      checks = 0;
      return;
    }
    failingSinceMs ??= Date.now();
    checks += 1;
    logger.warn(
      { outageMs: Date.now() - failingSinceMs, checks },
      "storage not writable; commands are redelivered and firing retries until it is",
    );
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
