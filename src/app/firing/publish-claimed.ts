import type { TimerKey } from "../../domain/timer.js";
import type { FiringPollDeps } from "./firing-poll-deps.js";

/**
 * Publishes one event per claimed timer, all in flight at once, and says which went out. The
 * claims of those that failed are given up, so the next poll (of any instance) retries them at
 * once; should that fail too, the claims expire by themselves and the retry only comes later.
 */
export async function publishClaimed<T extends { readonly timer: TimerKey }>(
  claimed: readonly T[],
  publish: (item: T) => Promise<void>,
  deps: Pick<FiringPollDeps, "store" | "metrics" | "logger" | "owner">,
  failureMessage: string,
): Promise<{ published: T[]; failed: number }> {
  const results = await Promise.allSettled(claimed.map(publish));
  const published: T[] = [];
  const unpublished: TimerKey[] = [];
  let firstError: unknown;
  results.forEach((result, i) => {
    if (result.status === "fulfilled") published.push(claimed[i]!);
    else {
      unpublished.push(claimed[i]!.timer);
      firstError ??= result.reason;
    }
  });
  if (unpublished.length > 0) {
    deps.metrics.publishFailed(unpublished.length);
    deps.logger.warn({ err: firstError, failed: unpublished.length, of: claimed.length }, failureMessage);
    try {
      await deps.store.releaseClaims(deps.owner, unpublished);
    } catch (error) {
      deps.logger.warn({ err: error, timers: unpublished.length }, "releasing claims after a failed publish failed");
    }
  }
  return { published, failed: unpublished.length };
}
