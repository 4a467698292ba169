import type { Clock } from "../clock.js";
import type { Logger } from "../logger.js";
import type { TimerEventPublisher } from "../timer-event-publisher.js";
import type { TimerMetrics } from "../timer-metrics.js";
import type { TimerStore } from "../timer-store.js";

/** What both firing workers (due timers, delivery deadlines) need: store, publisher and their claims. */
export interface FiringPollDeps {
  readonly store: TimerStore;
  readonly publisher: TimerEventPublisher;
  readonly clock: Clock;
  readonly metrics: TimerMetrics;
  readonly logger: Logger;
  readonly batchSize: number;
  /** This instance, as the owner of its claims. */
  readonly owner: string;
  /** How long a claim holds: longer than a poll's publish and record can take (CONTRACT §6). */
  readonly claimTtlMs: number;
  /** TIMER_HISTORY_ENTRIES (CONTRACT §19): entries each timer keeps; 0 or absent: none are written. */
  readonly historyEntries?: number;
}
