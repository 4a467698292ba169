/**
 * Time between two health checks of a store: one that stops answering fails a check within this
 * plus the time-out (readiness 503 within 2 × TIMER_DATABASE_TIMEOUT_MS), and one that answers
 * again passes within this (ready within 10 s, CONTRACT §16).
 */
export function healthCheckIntervalMs(timeoutMs: number): number {
  return Math.min(timeoutMs / 2, 2_000);
}
