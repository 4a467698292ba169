import type { TimerStore } from "./timer-store.js";
import type { TimerQueries } from "./queries/timer-queries.js";
import type { TimerRetention } from "./retention/timer-retention.js";

/**
 * Everything one store brings to the service: the ports it implements, whether several instances
 * may share it, and how to close it. Built by the storage factory (src/adapters/open-storage.ts), so
 * the rest of the service never asks which store it runs on.
 */
export interface Storage {
  /** For logs: "sqlite" or "postgres". */
  readonly kind: string;
  /** Commands, firing and deadlines; its `isWritable()` is the service's storage readiness. */
  readonly store: TimerStore;
  /** Reads for §9, on connections of their own where the store has connections. */
  readonly queries: TimerQueries;
  readonly retention: TimerRetention;
  /**
   * Set for a store only one instance may use (a SQLite file): its id and where it lives. The
   * service then holds a broker lease on its consumer naming that store, and works only while it does.
   */
  readonly exclusive?: { readonly id: string; readonly location: string };
  /** Other instances write it too, so counts read once at start go stale and are read again. */
  readonly shared: boolean;
  /**
   * Due-timer polls that may wait for their records at once (DueTimerLoop); absent: the loop's
   * default. A store whose records take connections of the pool its command batches and health
   * check need sets it low, so that a burst does not queue them behind its records.
   */
  readonly firingPollsInFlight?: number;
  /** Closes the store and everything the queries opened. */
  close(): Promise<void>;
}
