import type {
  DeadlineClaim,
  DeadlineRecord,
  DecideCommand,
  DueClaim,
  DueTimer,
  Firing,
  PrefixCancelSweep,
  TimerStore,
} from "../../app/timer-store.js";
import type { TimerRetention } from "../../app/retention/timer-retention.js";
import type { Clock } from "../../app/clock.js";
import type { DeadlineTimer } from "../../domain/delivery-rules.js";
import type { Timer, TimerKey } from "../../domain/timer.js";
import type { TimerCommand } from "../../domain/timer-command.js";
import type { CommandDecision } from "../../domain/timer-rules.js";
import { PrefixCancelIndex, type PrefixCancel } from "../../domain/prefix-cancel.js";
import { systemClock } from "../clock/system-clock.js";
import { SqliteWriteHealth } from "./sqlite-write-health.js";
import { commandKeys, decideCommandBatch, decideOnCurrent, decideSweepStep } from "../storage/store-core.js";
import { timerColumnValues } from "../storage/timer-columns.js";
import {
  openSqliteTimerStore,
  SAFETY_NET_AUTOCHECKPOINT_PAGES,
  type SqliteTimerStore,
  type SqliteTimerStoreOptions,
} from "./sqlite-timer-store.js";
import { timerOf, type PrefixCancelKey } from "./sqlite-timer-statements.js";
import { SqliteWriterThread } from "./sqlite-writer-thread.js";
import type Database from "better-sqlite3";

/** The later of two prefix-cancel timestamps, either of which may be missing. */
function newer(a: number | null | undefined, b: number | null | undefined): number | null | undefined {
  if (a === null || a === undefined) return b;
  if (b === null || b === undefined) return a;
  return Math.max(a, b);
}

/**
 * The prefix cancels a command batch decides against: the recorded ones and those the batch accepts
 * as it goes, which join the recorded ones only once the batch has committed.
 */
class BatchPrefixCancelIndex extends PrefixCancelIndex {
  constructor(private readonly recorded: PrefixCancelIndex) {
    super();
  }

  override get(tenantId: string, serviceCallIdPrefix: string): number | undefined {
    return newer(this.recorded.get(tenantId, serviceCallIdPrefix), super.get(tenantId, serviceCallIdPrefix)) ?? undefined;
  }

  override latestFor(tenantId: string, serviceCallId: string): number | null {
    return newer(this.recorded.latestFor(tenantId, serviceCallId), super.latestFor(tenantId, serviceCallId)) ?? null;
  }
}

/** Opens (creating and migrating) the database at `options.path` and starts its writer thread. */
export async function openThreadedSqliteTimerStore(options: SqliteTimerStoreOptions): Promise<ThreadedSqliteTimerStore> {
  let writer: SqliteWriterThread | undefined;
  // The reads' connection migrates the file first; the writer thread opens it migrated.
  const reads = openSqliteTimerStore(options, {
    raiseIdleTenants: (tenantIds) => void writer?.request("raiseDueTenants", [tenantIds]).catch(() => undefined),
  });
  try {
    writer = await SqliteWriterThread.start(options.path, {
      synchronous: options.synchronous,
      busyTimeoutMs: options.busyTimeoutMs,
      // The writer's commits would otherwise checkpoint every 1000 pages themselves.
      ...(reads.checkpointsInBackground ? { walAutocheckpointPages: SAFETY_NET_AUTOCHECKPOINT_PAGES } : {}),
    });
  } catch (error) {
    await reads.close();
    throw error;
  }
  return new ThreadedSqliteTimerStore(reads, writer, options.clock ?? systemClock);
}

/**
 * The SQLite store with its writes on a thread of their own (ADR-0011): every write transaction —
 * command batches, firing and deadline records, sweep steps, retention — runs on the writer thread
 * (SqliteWriter), so the event loop keeps answering HTTP and the broker while a commit writes its
 * pages and syncs. Reads (claims, the next due time, counts, the queries) stay on this thread's
 * connection: in WAL mode they never wait for the writer and see every commit it answered.
 *
 * A command batch's decisions stay on this thread, where the application's rule lives: the writer
 * opens the transaction and reads the batch's timers, this thread decides (the same steps as every
 * store, store-core.ts), the writer writes the result and commits. Nothing else writes meanwhile.
 */
export class ThreadedSqliteTimerStore implements TimerStore {
  readonly #health = new SqliteWriteHealth();
  /** The writer thread's queue runs each batch's begin in call order, after the commit before it. */
  readonly appliesInCallOrder = true;

  constructor(
    private readonly reads: SqliteTimerStore,
    private readonly writer: SqliteWriterThread,
    private readonly clock: Clock = systemClock,
  ) {}

  async applyCommands(commands: readonly TimerCommand[], decide: DecideCommand): Promise<CommandDecision[]> {
    const keys = commandKeys(commands);
    const { session, read } = this.writer.begin("beginCommands", [[...keys.values()]]);
    const rows = await this.#write(read, { begins: true });
    // From here the writer holds the batch open until its commit: whatever fails rolls it back (a
    // rollback after a commit that failed on the thread finds nothing open and does nothing).
    try {
      const current = new Map<string, Timer | undefined>();
      [...keys.keys()].forEach((id, i) => current.set(id, timerOf(rows[i])));
      const { decideOnKey, changed } = decideOnCurrent(current, decide);
      const cancels: PrefixCancel[] = [];
      const decisions = decideCommandBatch(commands, decide, {
        prefixIndex: new BatchPrefixCancelIndex(this.reads.prefixIndex),
        decideOnKey,
        recordPrefixCancel: (cancel) => cancels.push(cancel),
      });
      const timers = [...changed.values()].map(timerColumnValues);
      const committed = this.writer.request("commitCommands", [timers, cancels, this.clock.now()], session);
      // Joined to the index the moment the commit is answered, before any later batch's answer.
      committed.then(
        () => cancels.forEach((cancel) => this.reads.prefixIndex.add(cancel)),
        () => undefined,
      );
      await this.#write(committed);
      return decisions;
    } catch (error) {
      await this.writer.request("rollback", [], session).catch(() => undefined);
      throw error;
    }
  }

  async sweepPrefixCancel(
    prefix: PrefixCancelKey,
    limit: number,
    decide: DecideCommand,
  ): Promise<{ decisions: CommandDecision[]; done: boolean }> {
    const { tenantId, serviceCallIdPrefix } = prefix;
    const key = { tenantId, serviceCallIdPrefix };
    const { session, read } = this.writer.begin("beginSweep", [key, limit]);
    const batch = await this.#write(read, { begins: true });
    if (batch === undefined) return { decisions: [], done: true };
    try {
      const step = decideSweepStep(
        batch.rows.map((row) => timerOf(row)!),
        batch.commandTs,
        limit,
        decide,
      );
      const cancelled = step.decisions.flatMap((decision) => (decision.next === undefined ? [] : [timerColumnValues(decision.next)]));
      await this.#write(this.writer.request("commitSweep", [key, cancelled, step.progressKey], session));
      return { decisions: step.decisions, done: step.done };
    } catch (error) {
      await this.writer.request("rollback", [], session).catch(() => undefined);
      throw error;
    }
  }

  claimDue(claim: DueClaim): Promise<DueTimer[]> {
    return this.reads.claimDue(claim);
  }

  recordFirings(firings: readonly Firing[]): Promise<TimerKey[]> {
    return this.#write(this.writer.request("recordFirings", [[firings]]).then(([recorded]) => recorded!));
  }

  claimDeadlines(claim: DeadlineClaim): Promise<DeadlineTimer[]> {
    return this.reads.claimDeadlines(claim);
  }

  recordDeadlines(records: readonly DeadlineRecord[]): Promise<TimerKey[]> {
    return this.#write(this.writer.request("recordDeadlines", [records]));
  }

  nextDeadlineAt(): Promise<number | null> {
    return this.reads.nextDeadlineAt();
  }

  unfinishedPrefixCancels(): Promise<PrefixCancelSweep[]> {
    return this.reads.unfinishedPrefixCancels();
  }

  async releaseClaims(): Promise<void> {
    // No claims are recorded (one instance per file, as SqliteTimerStore).
  }

  nextDueAt(): Promise<number | null> {
    return this.reads.nextDueAt();
  }

  countScheduledOf(tenantIds: readonly string[]): Promise<ReadonlyMap<string, number>> {
    return this.reads.countScheduledOf(tenantIds);
  }

  countScheduled(): Promise<number> {
    return this.reads.countScheduled();
  }

  get(key: TimerKey): Promise<Timer | undefined> {
    return this.reads.get(key);
  }

  /** Retention's deletes, on the writer thread like every write. */
  get retention(): TimerRetention {
    return {
      deleteFinalTimers: (cutoffMs, limit) => this.writer.request("deleteFinalTimers", [cutoffMs, limit]),
      deletePrefixCancels: (cutoffMs, limit) => this.writer.request("deletePrefixCancels", [cutoffMs, limit]),
    };
  }

  /** The reads' connection, for the queries. */
  get database(): Database.Database {
    return this.reads.database;
  }

  /**
   * Starts a background check that takes the write lock on the writer thread and gives it back at
   * once, so that readiness shows a database locked by another process even while nothing writes
   * (CONTRACT §16), and a writer thread that stopped answering.
   */
  startHealthProbe(options: {
    readonly intervalMs: number;
    readonly timeoutMs: number;
    readonly onResult?: (error: unknown) => void;
  }): void {
    this.#health.startProbe(() => this.writer.request("probe", []), options);
  }

  /** Why the store is not healthy, for the outage log. */
  get fault(): string | undefined {
    return this.writer.failure?.message ?? this.#health.fault;
  }

  isOpen(): boolean {
    return this.reads.isOpen() && this.writer.failure === undefined;
  }

  /** Open, the writer thread running, not locked by another process, and the last write succeeded. */
  isWritable(): boolean {
    return this.isOpen() && this.#health.healthy;
  }

  async close(): Promise<void> {
    this.#health.stopProbe();
    await this.writer.close();
    await this.reads.close();
  }

  /**
   * Awaits a write and remembers whether it failed (busy, read-only, disk full). A batch's `begin`
   * that succeeds says nothing yet: its commit may still fail for want of space.
   */
  #write<T>(write: Promise<T>, { begins = false } = {}): Promise<T> {
    return this.#health.trackAsync(write, { onlyFailure: begins });
  }
}
