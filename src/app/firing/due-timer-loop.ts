import type { Clock } from "../clock.js";
import type { Logger } from "../logger.js";
import type { DueCursor, TimerStore } from "../timer-store.js";
import type { DueTimerPoll, PollReport } from "./due-timer-poll.js";
import { failedPollBackoffMs } from "./failure-backoff.js";
import { PollSpacing } from "./poll-spacing.js";
import { PollingLoop } from "../polling-loop.js";

export interface DueTimerLoopDeps {
  readonly worker: DueTimerPoll;
  readonly store: TimerStore;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The longest the loop ever sleeps: the safety net under the precise wake-ups. */
  readonly pollingIntervalMs: number;
  /** Polls not yet recorded, at most (default POLLS_IN_FLIGHT). */
  readonly pollsInFlight?: number;
}

/**
 * Polls whose publishes may still await their acks, while a backlog drains: what another tenant's
 * newly due timer queues behind at the broker.
 */
const PUBLISHING_POLLS = 8;
/**
 * Polls not yet recorded: published ones wait for the writer here, not in the publishing slots, so
 * that the next polls publish meanwhile and the records of several polls share one transaction.
 */
const POLLS_IN_FLIGHT = 32;
/**
 * Under sustained firing (≥ 200 timers/s), polls start at least 10 ms apart: one commit per ~10 ms
 * of due timers instead of one per timer (see PollSpacing). 10 ms keeps lag p99 far inside the
 * recurring-load target (≤ 50 ms at 10,000 occurrences/s); below 200/s every due time gets its own wake-up.
 */
const SUSTAINED_SPACING = { minSpacingMs: 10, sustainedPerSecond: 200 };
/**
 * While what is due waits only in tenants' catch-up lanes, polls look for other tenants' timers this
 * often (a lane that empties wakes the loop at once): the earliest due time is then a lane's, so it
 * cannot time the next poll.
 */
const LANE_RECHECK_MS = 50;

/**
 * Runs the worker's polls for as long as the service runs. It polls again at once while polls come
 * back full (a backlog drains at full speed), otherwise sleeps until the earliest due time it knows
 * of, never longer than the polling interval. `wake(dueAtMs)` cuts a sleep short when a command
 * schedules an earlier timer. Errors are logged and retried with backoff; the loop itself never dies.
 */
export class DueTimerLoop extends PollingLoop {
  private readonly spacing = new PollSpacing(SUSTAINED_SPACING);
  private consecutiveFailures = 0;

  constructor(private readonly deps: DueTimerLoopDeps) {
    super(deps.clock, deps.pollingIntervalMs);
  }

  /** One cycle: the polls of a chain, then the sleep until the next due time (spaced under load). */
  protected async cycle(): Promise<number> {
    const { clock } = this.deps;
    const startedAtMs = clock.now();
    const found = await this.pollUntilDrained();
    this.spacing.recordPoll(startedAtMs, found);
    if (this.stopped) return 0;
    const delayMs = await this.nextDelayMs();
    const waitingForLanes = found === 0 && this.deps.worker.catchUpsInProgress > 0;
    return this.spacing.delayMs(waitingForLanes ? Math.max(delayMs, LANE_RECHECK_MS) : delayMs, clock.now());
  }

  /** Stops after the cycle in hand and the catch-up groups being fired. */
  override async stop(): Promise<void> {
    await super.stop();
    await this.deps.worker.stopCatchUps();
  }

  /**
   * Polls while batches come back full and returns how many due timers the chain found. Timers
   * stored behind the chain's cursor meanwhile are due already, so the next-due-time lookup after
   * the chain makes the loop poll again at once.
   * Polls overlap: the next one reads after the timers the previous ones took of each tenant while
   * their publishes await their acks (up to PUBLISHING_POLLS) and their records the writer (up to
   * POLLS_IN_FLIGHT), so a backlog drains at the speed of the broker and the store rather than of
   * one round trip per batch. Each tenant's publish order stays oldest due first. The chain ends
   * once every poll is recorded: the next chain reads from the start, and must not find a timer
   * published but not yet recorded.
   */
  private async pollUntilDrained(): Promise<number> {
    const { worker, logger } = this.deps;
    const pollsInFlight = Math.max(this.deps.pollsInFlight ?? POLLS_IN_FLIGHT, PUBLISHING_POLLS);
    const inFlight: Promise<PollReport>[] = [];
    // The `published` of the polls started, oldest first: the oldest is awaited when
    // PUBLISHING_POLLS are listed (one that settled is then passed at once).
    const publishing: Promise<void>[] = [];
    let cursor: DueCursor | undefined;
    let more = true;
    // A poll that failed (a publish, the record, the read) ends the chain as soon as it does, not
    // once its turn comes to be awaited: no more polls start.
    let faulted = false;
    const fault = (): void => void (faulted = true);
    const mayStart = (): boolean => more && !faulted && !this.stopped;
    let found = 0;
    try {
      while (mayStart() || inFlight.length > 0) {
        if (mayStart() && inFlight.length < pollsInFlight) {
          if (publishing.length >= PUBLISHING_POLLS) {
            await publishing.shift();
            continue;
          }
          const poll = worker.startPoll(cursor);
          inFlight.push(poll.done);
          publishing.push(poll.published);
          poll.done.then((report) => report.failed > 0 && fault(), fault);
          const read = await poll.read;
          cursor = read.last;
          more = read.full && !this.stopped;
          continue;
        }
        // A report with failed publishes set `faulted` before this await resumes (its handler came first).
        found += (await inFlight.shift()!).found;
      }
    } catch (error) {
      await Promise.allSettled(inFlight);
      this.consecutiveFailures++;
      logger.error({ err: error, consecutiveFailures: this.consecutiveFailures }, "due-timer poll failed");
      return found;
    }
    if (faulted) {
      this.consecutiveFailures++;
      return found;
    }
    this.consecutiveFailures = 0;
    return found;
  }

  private async nextDelayMs(): Promise<number> {
    const { store, clock, pollingIntervalMs, logger } = this.deps;
    if (this.consecutiveFailures > 0) return failedPollBackoffMs(this.consecutiveFailures, pollingIntervalMs);
    try {
      const nextDueAtMs = await store.nextDueAt();
      // The sleep caps this at the polling interval and at 0.
      return nextDueAtMs === null ? pollingIntervalMs : nextDueAtMs - clock.now();
    } catch (error) {
      logger.error({ err: error }, "reading the next due time failed");
      return pollingIntervalMs;
    }
  }
}
