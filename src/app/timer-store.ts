import type { Timer, ScheduledTimer, TimerKey } from "../domain/timer.js";
import type { TimerCommand } from "../domain/timer-command.js";
import type { CommandDecision } from "../domain/timer-rules.js";

/** Decides what one command does to the current timer of its key; supplied by the application. */
export type DecideCommand = (current: Timer | undefined, command: TimerCommand) => CommandDecision;

/** What firing a timer needs of it: its key and version, due time, and the content its event carries. */
export type DueTimer = Pick<ScheduledTimer, "tenantId" | "serviceCallId" | "dueAtMs" | "generation" | "data" | "correlationId">;

/** One firing of one version of a timer: what the mark after publishing checks (CONTRACT §3.1). */
export type FiredTimer = Pick<DueTimer, "tenantId" | "serviceCallId" | "dueAtMs" | "generation">;

/** Position after the last timer of a page of due timers (keyset pagination, oldest due first). */
export interface DueCursor {
  readonly dueAtMs: number;
  readonly tenantId: string;
  readonly serviceCallId: string;
}

/** A request to claim due timers for publishing. */
export interface DueClaim {
  /** Due means `dueAtMs <= nowMs`. */
  readonly nowMs: number;
  readonly limit: number;
  /** Only timers strictly after this position (the previous page's last timer). */
  readonly after?: DueCursor;
  /** The instance claiming. */
  readonly owner: string;
  /** Until when the claim holds; after it another instance may take the timer (the owner died or stalled). */
  readonly leaseUntilMs: number;
}

/**
 * Durable storage of timers. Every adapter passes `test/contract/timer-store.contract.ts`.
 *
 * Methods throw on a storage fault (busy, read-only, disk full, connection lost); a method that
 * throws has changed nothing.
 */
export interface TimerStore {
  /**
   * Applies `commands` in order, in one transaction: for each one it reads the current timer of the
   * command's key (seeing the effect of earlier commands of the same call), asks `decide`, and stores
   * `decision.next` when it is set. Returns the decisions in command order once they are committed.
   * A store shared by several instances makes concurrent calls end as some sequential order would.
   */
  applyCommands(commands: readonly TimerCommand[], decide: DecideCommand): Promise<CommandDecision[]>;

  /**
   * Claims up to `limit` `Scheduled` timers with `dueAtMs <= nowMs` on which no other owner holds a
   * live claim, ordered by (dueAtMs, tenantId, serviceCallId), and returns them. A store that only
   * one instance can use may skip recording the claim.
   */
  claimDue(claim: DueClaim): Promise<DueTimer[]>;

  /**
   * Marks the given firings `Reached` at `reachedAtMs`, in one transaction, each only if the timer is
   * still `Scheduled` with the same dueAtMs and generation (a command that landed after the timer was
   * read wins) and no other owner holds a live claim on it. Returns the keys that were marked.
   */
  markReached(timers: readonly FiredTimer[], reachedAtMs: number, owner: string): Promise<TimerKey[]>;

  /**
   * Gives up `owner`'s claims (all of them, or only those on `timers`) so that the timers can be
   * claimed again at once: after a failed publish, and at shutdown.
   */
  releaseClaims(owner: string, timers?: readonly TimerKey[]): Promise<void>;

  /** The earliest dueAtMs of any `Scheduled` timer, or null when none is scheduled. */
  nextDueAt(): Promise<number | null>;

  /** How many timers are `Scheduled`, in the whole store. May cost a scan: not per poll. */
  countScheduled(): Promise<number>;

  /** The timer of `key`, or undefined. */
  get(key: TimerKey): Promise<Timer | undefined>;

  /** Open, and the last write succeeded (readiness: a storage fault shows until a write works again). */
  isWritable(): boolean;

  /** Releases the storage; further calls fail. */
  close(): Promise<void>;
}
