/**
 * Deletes what retention (CONTRACT §7) lets the service forget, a small batch per call so that each
 * call holds the database for milliseconds. Every adapter passes
 * `test/contract/timer-retention.contract.ts`.
 */
export interface TimerRetention {
  /**
   * Deletes up to `limit` timers in a final state (Reached, Cancelled, Missed, Completed, Failed,
   * TimedOut) whose last change (`updatedAtMs`) is before `cutoffMs`, oldest change first, in one
   * transaction; returns how many it deleted. Served by the partial index of final timers.
   */
  deleteFinalTimers(cutoffMs: number, limit: number): Promise<number>;

  /** Likewise for recorded prefix cancels (CONTRACT §10) last changed before `cutoffMs`. */
  deletePrefixCancels(cutoffMs: number, limit: number): Promise<number>;
}
