import type { Clock } from "./clock.js";
import type { Logger } from "./logger.js";
import { PeriodicLoop } from "./periodic-loop.js";
import type { TimerStore } from "./timer-store.js";

/** The least time between two warn lines. */
export const STORAGE_CHECK_INTERVAL_MS = 10_000;
/** How often storage health is looked at: the first warn comes this soon after readiness fails. */
const LOOK_INTERVAL_MS = 1_000;

/**
 * While the store cannot be written (a locked or full SQLite file, Postgres away), says so at warn
 * level once per interval with how long it has lasted, then once when it recovers. The failing
 * operations log their own errors; this line is the one an operator's log alert can key on.
 */
export function watchStorageOutage(store: TimerStore, logger: Logger, clock: Clock, intervalMs = STORAGE_CHECK_INTERVAL_MS): () => void {
  let failingSinceMs: number | undefined;
  let lastWarnMs = 0;
  let checks = 0;
  const look = new PeriodicLoop(clock, Math.min(LOOK_INTERVAL_MS, intervalMs), () => {
    const nowMs = clock.now();
    if (store.isWritable()) {
      if (failingSinceMs !== undefined) logger.info({ outageMs: nowMs - failingSinceMs }, "storage writable again");
      failingSinceMs = undefined;
      checks = 0;
      return;
    }
    failingSinceMs ??= nowMs;
    if (nowMs - lastWarnMs < intervalMs) return;
    lastWarnMs = nowMs;
    checks += 1;
    logger.warn(
      { outageMs: nowMs - failingSinceMs, checks, ...(store.fault === undefined ? {} : { fault: store.fault }) },
      "storage not writable; commands are redelivered and firing retries until it is",
    );
  });
  look.start();
  return () => void look.stop();
}
