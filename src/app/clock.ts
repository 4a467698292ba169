/** Where the service reads the time. Tests substitute a clock they move by hand. */
export interface Clock {
  /** Wall-clock time in epoch milliseconds. */
  now(): number;
}
