import type { Timer, ScheduledTimer, TimerKey } from "../domain/timer.js";
import type { TimerCommand } from "../domain/timer-command.js";
import type { CommandDecision } from "../domain/command-rules.js";
import type { TimerAfterFiring } from "../domain/firing-rules.js";
import type { DeadlineTimer, TimerAfterDeadline } from "../domain/delivery-rules.js";
import type { PrefixCancel } from "../domain/prefix-cancel.js";
import type { DecideRules } from "./command-batch.js";
import type { AppliedDecision } from "./applied-decision.js";
import type { HistoryAppend } from "../domain/timer-history.js";

/**
 * What firing a timer needs of it: its key and version, due time, the content its event carries, its
 * series and lateness policy, and `prefixCancelTs`: the newest recorded prefix cancel matching its
 * key (null when none), so that a timer a prefix cancel covers never fires, even before the sweep
 * has reached it.
 */
export type DueTimer = Pick<
  ScheduledTimer,
  | "tenantId"
  | "serviceCallId"
  | "dueAtMs"
  | "generation"
  | "data"
  | "correlationId"
  | "occurrence"
  | "repeat"
  | "maxLatenessMs"
  | "commandTs"
  | "reachedAtMs"
  | "delivery"
  | "traceId"
  | "traceFlags"
  | "traceState"
  | "traceSpanId"
> & { readonly prefixCancelTs: number | null };

/**
 * One firing of one version of a timer: the due time and generation that were read and published
 * (what the record after publishing checks, CONTRACT §3.1), and what the timer becomes.
 */
export interface Firing extends TimerKey {
  readonly dueAtMs: number;
  readonly generation: number;
  readonly next: TimerAfterFiring;
  /** The entry its history gains (CONTRACT §19); absent: none. */
  readonly history?: HistoryAppend;
}

/** Where the background cancelling of one prefix cancel's timers has got to. */
export interface PrefixCancelSweep extends PrefixCancel {
  /** The last serviceCallId handled; "" before the first batch. */
  readonly progressKey: string;
}

/** Position after the last timer a chain of polls took of one tenant (keyset, oldest due first). */
export interface TenantDuePosition {
  readonly dueAtMs: number;
  readonly serviceCallId: string;
}

/** Per tenant, the position after the last due timer already taken by a chain of polls. */
export type DueCursor = ReadonlyMap<string, TenantDuePosition>;

/** A request to claim due timers for publishing. */
export interface DueClaim {
  /** Due means `dueAtMs <= nowMs`. */
  readonly nowMs: number;
  readonly limit: number;
  /** Of each tenant named, only timers strictly after its position (taken by earlier polls of a chain). */
  readonly after?: DueCursor;
  /** The instance claiming. */
  readonly owner: string;
  /** Until when the claim holds; after it another instance may take the timer (the owner died or stalled). */
  readonly leaseUntilMs: number;
}

/** A request to claim `Fired` timers whose deadline passed (CONTRACT §11), like a `DueClaim`. */
export interface DeadlineClaim {
  /** Passed means `deadlineAtMs <= nowMs`. */
  readonly nowMs: number;
  readonly limit: number;
  readonly owner: string;
  readonly leaseUntilMs: number;
}

/**
 * What a passed deadline made of a `Fired` timer: the attempt and deadline that were read (the
 * guard: a report that landed meanwhile wins) and the columns to write.
 */
export interface DeadlineRecord extends TimerKey {
  readonly attempt: number;
  readonly deadlineAtMs: number;
  readonly next: TimerAfterDeadline;
  /** The entry its history gains (CONTRACT §19); absent: none. */
  readonly history?: HistoryAppend;
}

/**
 * Durable storage of timers. Every adapter passes `test/contract/timer-store.contract.ts`.
 *
 * Methods throw on a storage fault (busy, read-only, disk full, connection lost); a method that
 * throws has changed nothing.
 */
export interface TimerStore {
  /**
   * Applies `commands` in order, in one transaction, as `decideCommandBatch` (command-batch.ts)
   * decides them under `rules`: each against the current timer of its key (seeing the effect of
   * earlier commands of the same call), the prefix cancels recorded (those of the same call
   * included) and, with a quota, the tenants' Scheduled counts read in the same transaction; it
   * stores every changed timer and records every accepted prefix cancel (timestamp = the command's,
   * its sweep restarted from the beginning of the prefix). Returns the decisions in command order
   * once they are committed. Calls take effect in the order they were made, even a call made before
   * the one before it resolved (the call is queued before it first awaits): the application hands
   * the next batch over without waiting for the last commit (TimerCommandProcessor). A call that
   * fails or times out is redelivered after later ones, so its order is not kept. Across the
   * instances sharing a store, concurrent calls end as some sequential order would.
   */
  applyCommands(commands: readonly TimerCommand[], rules: DecideRules): Promise<AppliedDecision[]>;

  /**
   * Claims up to `limit` `Scheduled` timers with `dueAtMs <= nowMs` on which no other owner holds a
   * live claim, fairly across tenants (CONTRACT §12, fair-due-selection.ts): of the tenants with due
   * timers, up to `limit` taken by their earliest due time, each tenant's due timers oldest first,
   * dealt round-robin (every tenant's first, then every tenant's second, …). Returns them in that
   * order. A store that only one instance can use may skip recording the claim.
   */
  claimDue(claim: DueClaim): Promise<DueTimer[]>;

  /**
   * Stores what the given firings made of their timers (`firing.next`), in one transaction, each only
   * if the timer is still `Scheduled` with the dueAtMs and generation that were read (a command that
   * landed after the timer was read wins, and a stale second record of a recurring timer cannot
   * advance it twice), no other owner holds a live claim on it, and — unless the firing itself
   * cancels the timer — no prefix cancel recorded meanwhile covers it (timestamp ≥ the timer's
   * commandTs): such a timer stays as it is, and counts as cancelled. A timer that stays `Scheduled`
   * (the next occurrence) loses the claim. `commandTs` is written only when larger than the stored one
   * (a command may have moved it meanwhile). Returns the keys that were recorded.
   */
  recordFirings(firings: readonly Firing[], owner: string): Promise<TimerKey[]>;

  /**
   * Claims up to `limit` `Fired` timers with `deadlineAtMs <= nowMs` on which no other owner holds a
   * live claim, oldest deadline first, through the deadline index (no scan), and returns them.
   */
  claimDeadlines(claim: DeadlineClaim): Promise<DeadlineTimer[]>;

  /**
   * Stores what passed deadlines made of their timers, in one transaction, each only if the timer is
   * still `Fired` with the attempt and deadline that were read and no other owner holds a live claim
   * on it; the claim is given up. Returns the keys that were recorded.
   */
  recordDeadlines(records: readonly DeadlineRecord[], owner: string): Promise<TimerKey[]>;

  /** The earliest deadline of a `Fired` timer, or null when none. */
  nextDeadlineAt(): Promise<number | null>;

  /**
   * Gives up `owner`'s claims (all of them, or only those on `timers`) so that the timers can be
   * claimed again at once: after a failed publish, and at shutdown.
   */
  releaseClaims(owner: string, timers?: readonly TimerKey[]): Promise<void>;

  /** Every recorded prefix cancel whose sweep has not finished, with its progress. */
  unfinishedPrefixCancels(): Promise<PrefixCancelSweep[]>;

  /**
   * One bounded step of the sweep of a recorded prefix cancel, in one transaction: takes up to
   * `limit` timers of the tenant whose serviceCallId starts with the prefix, after the recorded
   * progress in key order, decides each as a `CancelTimer` carrying the prefix cancel's (current)
   * timestamp and no correlationId at `nowMs` (`decideSweepStep`), stores each `next`, and records the progress
   * (finished when fewer than `limit` were left). Returns the decisions, and whether it finished.
   * A prefix cancel that is unknown or finished returns no decisions and `done`.
   */
  sweepPrefixCancel(
    prefix: Pick<PrefixCancel, "tenantId" | "serviceCallIdPrefix">,
    limit: number,
    nowMs: number,
    /** TIMER_HISTORY_ENTRIES (CONTRACT §19): each timer cancelled gains an entry; 0 or absent: none. */
    historyEntries?: number,
  ): Promise<{ readonly decisions: CommandDecision[]; readonly done: boolean }>;

  /** The earliest dueAtMs of any `Scheduled` timer, or null when none is scheduled. */
  nextDueAt(): Promise<number | null>;

  /** How many timers are `Scheduled`, in the whole store. May cost a scan: not per poll. */
  countScheduled(): Promise<number>;

  /** How many timers each of the tenants has `Scheduled`, from kept counts (no scan); absent = 0. */
  countScheduledOf(tenantIds: readonly string[]): Promise<ReadonlyMap<string, number>>;

  /** The timer of `key`, or undefined. */
  get(key: TimerKey): Promise<Timer | undefined>;

  /**
   * Open, answering its health check when it runs one (CONTRACT §16), and the last write succeeded
   * (readiness: a storage fault shows until a write, or for a lost or locked database a health
   * check, works again).
   */
  isWritable(): boolean;

  /** Why the store is not answering, when its health check knows (never credentials). */
  readonly fault?: string | undefined;

  /** Releases the storage; further calls fail. */
  close(): Promise<void>;
}
