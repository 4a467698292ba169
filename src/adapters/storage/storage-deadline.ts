/** A storage call did not finish within TIMER_DATABASE_TIMEOUT_MS: a transient fault (CONTRACT §16). */
export class StorageTimeoutError extends Error {
  override readonly name = "StorageTimeoutError";
  readonly code = "STORAGE_TIMEOUT";
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
  ) {
    super(`${what} did not finish within ${timeoutMs} ms`);
  }
}

/**
 * Settles with `work`, or rejects with StorageTimeoutError after `timeoutMs`. The work itself is not
 * stopped: the driver's own time-outs end it and close its connection; its outcome is then ignored
 * (a late commit is harmless: commands are idempotent and claims expire).
 */
export function withDeadline<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StorageTimeoutError(what, timeoutMs)), timeoutMs);
  });
  // The abandoned work may still fail later; that failure is expected and must not be unhandled.
  work.catch(() => undefined);
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
