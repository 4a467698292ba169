import type { CommandOptions, TimerClient, TimerState } from "@timer-service/client";

/** The states a RetryTimer re-arms (CONTRACT §14). */
export const RETRYABLE_STATES = ["Failed", "TimedOut", "Missed"] as const;

export interface BulkRetry {
  readonly state: (typeof RETRYABLE_STATES)[number];
  readonly serviceCallIdPrefix: string | undefined;
  /** Envelope members and headers of every RetryTimer sent (correlationId, traceparent). */
  readonly options: CommandOptions;
}

/** Publishes acked in parallel at most. */
const WINDOW = 256;

/**
 * `retry --state S [--id-prefix P]`: lists the tenant's timers in S (§9 `list`, page by page) and
 * sends a `RetryTimer` for each one, awaiting every ack. Returns how many were sent.
 */
export async function retryMatching(timers: TimerClient, bulk: BulkRetry): Promise<number> {
  const { state, serviceCallIdPrefix, options } = bulk;
  let cursor: string | null = null;
  let sent = 0;
  do {
    const page = await timers.list({
      state: state satisfies TimerState,
      limit: 1000,
      ...(serviceCallIdPrefix === undefined ? {} : { serviceCallIdPrefix }),
      ...(cursor === null ? {} : { cursor }),
    });
    for (let start = 0; start < page.timers.length; start += WINDOW) {
      await Promise.all(page.timers.slice(start, start + WINDOW).map(({ serviceCallId }) => timers.retry(serviceCallId, options)));
    }
    sent += page.timers.length;
    cursor = page.nextCursor;
  } while (cursor !== null);
  return sent;
}
