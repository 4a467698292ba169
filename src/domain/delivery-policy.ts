/** `delivery` of a `ScheduleTimer` (CONTRACT §11), defaults filled in. */
export interface DeliveryPolicy {
  /** 0 … 100: publishes after the first one. */
  readonly maxRetries: number;
  /** ≥ 100: the wait before attempt n + 1 is `backoffMs × 2^(n−1)`. */
  readonly backoffMs: number;
  /** ≥ 1000: no report this long after a publish counts as a failure with reason `timeout`. */
  readonly completionTimeoutMs: number;
}
