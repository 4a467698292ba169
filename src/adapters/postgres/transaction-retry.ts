/** SQLSTATEs after which running the whole transaction again can succeed. */
const RETRYABLE_CODES = new Set([
  "40001", // serialization_failure
  "40P01", // deadlock_detected
]);

/** Another instance inserted a key this transaction meant to create: run it again, reading that row. */
export class ConcurrentInsertError extends Error {
  override readonly name = "ConcurrentInsertError";
  constructor() {
    super("a timer row was inserted concurrently by another transaction");
  }
}

export function isRetryable(error: unknown): boolean {
  if (error instanceof ConcurrentInsertError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && RETRYABLE_CODES.has(code);
}

export interface RetryPolicy {
  readonly attempts: number;
  /** Upper bound of the random wait before the first retry; doubles with each further one. */
  readonly baseDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 5 };

/**
 * Runs `attempt` until it succeeds, retrying after a retryable failure with full jitter, so that
 * two instances that collided do not collide again in lockstep. Each attempt must be a whole
 * transaction that changed nothing when it failed.
 */
export async function withRetry<T>(attempt: () => Promise<T>, policy: RetryPolicy = DEFAULT_RETRY): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (error) {
      if (n >= policy.attempts || !isRetryable(error)) throw error;
      const delayMs = Math.random() * policy.baseDelayMs * 2 ** (n - 1);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}
