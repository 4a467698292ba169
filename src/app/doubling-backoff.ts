/** 2^16 × base: past any cap used here (1 h polling interval at most), which caps the wait anyway. */
const MAX_DOUBLINGS = 16;

/**
 * The wait after the `failures`-th failure in a row (≥ 1): `baseMs`, then doubling, never above
 * `capMs`. One formula for the firing loops, the retention loop and command redelivery.
 */
export function doublingBackoffMs(failures: number, baseMs: number, capMs: number): number {
  const doublings = Math.min(Math.max(failures - 1, 0), MAX_DOUBLINGS);
  return Math.min(capMs, baseMs * 2 ** doublings);
}
