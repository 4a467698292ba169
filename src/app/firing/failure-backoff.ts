import { doublingBackoffMs } from "../doubling-backoff.js";

/** The sleep after the first failed poll; each further failure in a row doubles it. */
const FAILURE_BACKOFF_BASE_MS = 100;

/**
 * The sleep of a firing loop after `consecutiveFailures` (≥ 1) failed polls in a row: 100 ms,
 * 200 ms, 400 ms … and never longer than the polling interval, so a loop facing a failing store or
 * broker keeps polling at least as often as it does when idle.
 */
export function failedPollBackoffMs(consecutiveFailures: number, pollingIntervalMs: number): number {
  return doublingBackoffMs(consecutiveFailures, FAILURE_BACKOFF_BASE_MS, pollingIntervalMs);
}
