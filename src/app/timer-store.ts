import type { Timer, ScheduledTimer, TimerKey } from "../domain/timer.js";
import type { TimerCommand } from "../domain/timer-command.js";
import type { CommandDecision } from "../domain/timer-rules.js";

/** Decides what one command does to the current timer of its key; supplied by the application. */
export type DecideCommand = (current: Timer | undefined, command: TimerCommand) => CommandDecision;

/** What firing a timer needs of it: its key, due time, and the content its event carries. */
export type DueTimer = Pick<ScheduledTimer, "tenantId" | "serviceCallId" | "dueAtMs" | "data" | "correlationId">;

/** Position after the last timer of a page of due timers (keyset pagination, oldest due first). */
export interface DueCursor {
  readonly dueAtMs: number;
  readonly tenantId: string;
  readonly serviceCallId: string;
}

/**
 * Durable storage of timers. Every adapter passes `test/contract/timer-store.contract.ts`.
 *
 * Methods throw on a storage fault (busy, read-only, disk full); a method that throws has changed
 * nothing.
 */
export interface TimerStore {
  /**
   * Applies `commands` in order, in one transaction: for each one it reads the current timer of the
   * command's key (seeing the effect of earlier commands of the same call), asks `decide`, and stores
   * `decision.next` when it is set. Returns the decisions in command order once they are committed.
   */
  applyCommands(commands: readonly TimerCommand[], decide: DecideCommand): Promise<CommandDecision[]>;

  /**
   * Up to `limit` `Scheduled` timers with `dueAtMs <= nowMs`, ordered by (dueAtMs, tenantId,
   * serviceCallId); when `after` is given, only timers strictly after that position.
   */
  findDue(nowMs: number, limit: number, after?: DueCursor): Promise<DueTimer[]>;

  /**
   * Marks the given timers `Reached` at `reachedAtMs`, in one transaction, each only if it is still
   * `Scheduled` with the same dueAtMs, data and correlationId as given (a reschedule that landed
   * after the timer was read wins). Returns the keys that were marked.
   */
  markReached(timers: readonly DueTimer[], reachedAtMs: number): Promise<TimerKey[]>;

  /** The earliest dueAtMs of any `Scheduled` timer, or null when none is scheduled. */
  nextDueAt(): Promise<number | null>;

  /** How many timers are `Scheduled`. May cost a scan: call it at start-up, not per poll. */
  countScheduled(): Promise<number>;

  /** The timer of `key`, or undefined. */
  get(key: TimerKey): Promise<Timer | undefined>;

  /** Releases the storage; further calls fail. */
  close(): Promise<void>;
}
