import type { Logger } from "../app/logger.js";
import { PeriodicLoop } from "../app/periodic-loop.js";
import { systemClock } from "../adapters/clock/system-clock.js";

const CHECK_INTERVAL_MS = 200;

/**
 * When started through `npm start`, npm is the parent. A `kill -9` of npm cannot reach this process,
 * which would live on as an orphan holding the consumer and the database. So, under npm only, the
 * process ends itself as abruptly as its parent did once it notices it was re-parented.
 */
export function exitWhenParentDies(logger: Logger): void {
  const parent = process.ppid;
  new PeriodicLoop(systemClock, CHECK_INTERVAL_MS, () => {
    if (process.ppid === parent) return;
    logger.error({ parent }, "parent process died; exiting");
    process.kill(process.pid, "SIGKILL");
  }).start();
}
