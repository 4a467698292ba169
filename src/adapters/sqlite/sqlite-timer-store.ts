import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import type {
  DeadlineClaim,
  DeadlineRecord,
  DecideCommand,
  DueClaim,
  TenantDuePosition,
  DueTimer,
  Firing,
  PrefixCancelSweep,
  TimerStore,
} from "../../app/timer-store.js";
import type { DeadlineTimer } from "../../domain/delivery-rules.js";
import { deliveryOf, withoutUnsetTrace } from "../delivery-columns.js";
import type { Timer, TimerKey } from "../../domain/timer.js";
import type { TimerCommand } from "../../domain/timer-command.js";
import type { CommandDecision } from "../../domain/timer-rules.js";
import { parseRecurrence } from "../../domain/recurrence.js";
import { PrefixCancelIndex, prefixUpperBound } from "../../domain/prefix-cancel.js";
import { compareTimerKeys } from "../../domain/code-point-order.js";
import { WalCheckpointer } from "./wal-checkpointer.js";
import { dealRoundRobin } from "../../app/firing/fair-due-selection.js";
import { SqliteWriteHealth } from "./sqlite-write-health.js";
import type { Clock } from "../../app/clock.js";
import { systemClock } from "../clock/system-clock.js";
import { decideCommandBatch, decideSweepStep, firingOverriddenByPrefixCancel } from "../storage/store-core.js";
import { timerColumnValues } from "../storage/timer-columns.js";
import { TurnCoalescer } from "../storage/turn-coalescer.js";
import {
  prepareTimerStatements,
  timerOf,
  type DueTimerRow,
  type PrefixCancelKey,
  type SqliteTimerStatements,
} from "./sqlite-timer-statements.js";

export interface SqliteTimerStoreOptions {
  /** The database file; its folder is created when missing. */
  readonly path: string;
  /**
   * FULL (default, as TIMER_DB_SYNCHRONOUS): fsync at every commit, so commits survive a power loss.
   * NORMAL: in WAL mode a commit survives a crash of the process (kill -9), as the OS still holds
   * the written pages; only a power loss or OS crash can lose the last commits; more commits per second.
   */
  readonly synchronous?: "NORMAL" | "FULL";
  /** How long a statement waits for a lock held by another connection before failing. */
  readonly busyTimeoutMs?: number;
  /** The folder of drizzle-kit's SQL migrations; defaults to `drizzle/sqlite` at the package root. */
  readonly migrationsFolder?: string;
  /**
   * Checkpoint the WAL from a worker thread instead of inside the commits of this connection, so
   * the event-loop thread spends less CPU per command. Off by default (tests).
   */
  readonly backgroundCheckpoint?: { readonly intervalMs: number; readonly onError: (message: string) => void };
  /** What the store stamps its own records with (a prefix cancel's `updated_at`). Default: the system clock. */
  readonly clock?: Clock;
}

/**
 * With background checkpoints the writer's own auto-checkpoint stays as a safety net only, should
 * the worker fall behind or die: at 50,000 pages (~200 MB of WAL).
 */
export const SAFETY_NET_AUTOCHECKPOINT_PAGES = 50_000;

/**
 * The positions of `keys` in key order (the primary key's: code points). A fair claim deals its timers round-robin across tenants;
 * updated in that order, consecutive rows sit in different parts of every index. In key order they
 * share the pages they dirty. Stable: two firings of one key keep their order.
 */
function inKeyOrder(keys: readonly TimerKey[]): number[] {
  return keys.map((_, i) => i).sort((i, j) => compareTimerKeys(keys[i]!, keys[j]!));
}

/** Tenants whose real earliest due time nextDueAt reads at most (one index seek each). */
const NEXT_DUE_WALK = 64;

// src/adapters/sqlite/ and dist/adapters/sqlite/ are both three levels below the package root.
const DEFAULT_MIGRATIONS_FOLDER = fileURLToPath(new URL("../../../drizzle/sqlite", import.meta.url));

/** The connection settings every connection of the service's file shares. */
export interface SqliteConnectionOptions {
  readonly synchronous?: "NORMAL" | "FULL";
  readonly busyTimeoutMs?: number;
  /**
   * The WAL size (pages) at which a commit of this connection checkpoints; SQLite's default (1000)
   * when absent. Raised where a background checkpointer does the work (a safety net only).
   */
  readonly walAutocheckpointPages?: number;
}

/** Opens a connection to the timer database at `path` with the service's settings; no migration. */
export function openSqliteConnection(path: string, options: SqliteConnectionOptions): Database.Database {
  const db = new Database(path);
  try {
    db.pragma("journal_mode = WAL");
    db.pragma(`synchronous = ${options.synchronous ?? "FULL"}`);
    db.pragma(`busy_timeout = ${Math.trunc(options.busyTimeoutMs ?? 5000)}`);
    // 32 MB of page cache: fewer page reads when commands land at random places of a large table.
    db.pragma("cache_size = -32768");
    // The delete trigger of timer_state_counts must also see rows an INSERT OR REPLACE removes
    // (SQLite fires delete triggers for those only with recursive triggers on).
    db.pragma("recursive_triggers = ON");
    if (options.walAutocheckpointPages !== undefined) db.pragma(`wal_autocheckpoint = ${Math.trunc(options.walAutocheckpointPages)}`);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** Opens (creating when missing) and migrates the timer database at `options.path`. */
export function openSqliteTimerStore(options: SqliteTimerStoreOptions, hooks: SqliteTimerStoreHooks = {}): SqliteTimerStore {
  mkdirSync(dirname(options.path), { recursive: true });
  const db = openSqliteConnection(options.path, options);
  try {
    // wal_autocheckpoint is raised only with background checkpoints (below). No query here sorts or
    // builds a temp table, so temp_store does not matter.
    migrate(drizzle({ client: db }), { migrationsFolder: options.migrationsFolder ?? DEFAULT_MIGRATIONS_FOLDER });
    const background = options.backgroundCheckpoint;
    const checkpointer =
      background === undefined ? undefined : WalCheckpointer.start(options.path, background.intervalMs, background.onError);
    if (checkpointer !== undefined) db.pragma(`wal_autocheckpoint = ${SAFETY_NET_AUTOCHECKPOINT_PAGES}`);
    return new SqliteTimerStore(db, { ...hooks, checkpointer, clock: options.clock });
  } catch (error) {
    db.close();
    throw error;
  }
}

/** What another adapter built around this store changes of it (ThreadedSqliteTimerStore). */
export interface SqliteTimerStoreHooks {
  /**
   * Where a claim sends the tenants it found with nothing due, to raise their bound (a write).
   * Default: a write transaction on this store's connection.
   */
  readonly raiseIdleTenants?: (tenantIds: readonly string[]) => void;
}

/**
 * Timers in one SQLite table (`timer_schedules`). The hot paths use better-sqlite3 prepared
 * statements directly; drizzle defines the schema and applies the migrations.
 *
 * One instance only uses a SQLite file (the broker lease guards it, CONTRACT §6), so claims on due
 * timers are not recorded: nobody else could take them.
 */
export class SqliteTimerStore implements TimerStore {
  readonly #health = new SqliteWriteHealth();
  readonly #db: Database.Database;
  readonly #sql: SqliteTimerStatements;
  readonly #raiseDueTenant: (tenantIds: readonly string[]) => void;
  readonly #recordDeadlinesAll: (records: readonly DeadlineRecord[]) => TimerKey[];
  readonly #applyAll: (commands: readonly TimerCommand[], decide: DecideCommand) => CommandDecision[];
  readonly #recordAll: (calls: readonly (readonly Firing[])[]) => TimerKey[][];
  /**
   * The first record of a turn of the event loop at once, the others of that turn in one transaction
   * at its end (TurnCoalescer): with polls pipelined, a fair claim of many tenants records a few
   * timers per tenant per poll, and a commit per poll would write a page per timer in every index.
   */
  readonly #records: TurnCoalescer<readonly Firing[], TimerKey[]>;
  readonly #sweepStep: (prefix: PrefixCancelKey, limit: number, decide: DecideCommand) => { decisions: CommandDecision[]; done: boolean };
  /**
   * Every recorded prefix cancel, for the lookups of commands and firing. This store is the only
   * writer of its file (CONTRACT §6), so the cache is exact: rebuilt from the table when a write fails.
   */
  #prefixIndex = new PrefixCancelIndex();

  readonly #checkpointer: WalCheckpointer | undefined;
  readonly #raiseIdleTenants: (tenantIds: readonly string[]) => void;
  private readonly clock: Clock;

  constructor(
    db: Database.Database,
    options: SqliteTimerStoreHooks & { readonly checkpointer?: WalCheckpointer; readonly clock?: Clock } = {},
  ) {
    this.#db = db;
    this.#checkpointer = options.checkpointer;
    this.clock = options.clock ?? systemClock;
    const sql = prepareTimerStatements(db);
    this.#sql = sql;
    this.#loadPrefixIndex();
    this.#raiseDueTenant = db.transaction(sql.raiseEarliest).immediate;
    this.#recordDeadlinesAll = db.transaction((records: readonly DeadlineRecord[]) => {
      const recorded: TimerKey[] = [];
      for (const { tenantId, serviceCallId, attempt, deadlineAtMs, next } of records) {
        const changes = this.#sql.recordDeadline.run({
          tenantId,
          serviceCallId,
          attempt,
          deadlineAtMs,
          state: next.state,
          nextAttempt: next.attempt,
          reachedAtMs: next.reachedAtMs,
          nextDeadlineAtMs: next.deadlineAtMs,
          lastReason: next.lastReason,
          updatedAtMs: next.updatedAtMs,
        }).changes;
        if (changes === 1) recorded.push({ tenantId, serviceCallId });
      }
      return recorded;
    }).immediate;

    // IMMEDIATE takes the write lock up front: a deferred transaction that reads and then writes can
    // fail with SQLITE_BUSY at the upgrade without waiting for busy_timeout.
    this.#applyAll = db.transaction((commands: readonly TimerCommand[], decide: DecideCommand) =>
      decideCommandBatch(commands, decide, {
        prefixIndex: this.#prefixIndex,
        decideOnKey: (command, context) => {
          // Most commands create their key: decided as for a new key and inserted unless the key
          // exists, which saves the read. Otherwise decided again on the stored timer.
          const asNew = decide(undefined, command, context);
          if (asNew.next !== undefined && this.#sql.insertNew.run(timerColumnValues(asNew.next)).changes === 1) return asNew;
          const decision = decide(timerOf(this.#sql.selectByKey.get(command.tenantId, command.serviceCallId)), command, context);
          if (decision.next !== undefined) this.#sql.upsert.run(timerColumnValues(decision.next));
          return decision;
        },
        recordPrefixCancel: (cancel) => this.#sql.upsertPrefixCancel.run({ ...cancel, nowMs: this.clock.now() }),
      }),
    ).immediate;
    // The firings of several calls in one transaction (see #records); the recorded keys of each call.
    this.#recordAll = db.transaction((calls: readonly (readonly Firing[])[]) => {
      const firings = calls.flat();
      const recorded = new Array<boolean>(firings.length).fill(false);
      const tenants = new Set<string>();
      for (const i of inKeyOrder(firings)) {
        const { tenantId, serviceCallId, dueAtMs, generation, next } = firings[i]!;
        const { state, occurrence, reachedAtMs, commandTs, updatedAtMs } = next;
        if (firingOverriddenByPrefixCancel(this.#prefixCancelOf(tenantId, serviceCallId), next)) continue;
        const { tracking } = next;
        const changes = this.#sql.recordFiring.run(
          state,
          next.dueAtMs,
          occurrence,
          reachedAtMs,
          commandTs,
          updatedAtMs,
          tracking?.attempt ?? null,
          tracking?.firedAtMs ?? null,
          tracking?.deadlineAtMs ?? null,
          tenantId,
          serviceCallId,
          dueAtMs,
          generation,
        ).changes;
        if (changes === 1) {
          recorded[i] = true;
          tenants.add(tenantId);
        }
      }
      // The tenants fired from have a later earliest due time now (or none).
      sql.raiseEarliest(tenants);
      let offset = 0;
      return calls.map((call) => {
        const keys = call.flatMap(({ tenantId, serviceCallId }, i) => (recorded[offset + i] ? [{ tenantId, serviceCallId }] : []));
        offset += call.length;
        return keys;
      });
    }).immediate;
    this.#records = new TurnCoalescer((calls: readonly (readonly Firing[])[]) => this.recordFiringCalls(calls));
    this.#sweepStep = db.transaction((prefix: PrefixCancelKey, limit: number, decide: DecideCommand) => {
      const record = this.#sql.selectPrefixCancel.get(prefix);
      if (record === undefined || record.progressKey === null) return { decisions: [], done: true };
      const rows = this.#sql.sweepSelect(prefix.serviceCallIdPrefix, record.progressKey).all({
        tenantId: prefix.tenantId,
        from: record.progressKey === "" ? prefix.serviceCallIdPrefix : record.progressKey,
        upper: prefixUpperBound(prefix.serviceCallIdPrefix),
        limit,
      });
      const step = decideSweepStep(
        rows.map((row) => timerOf(row)!),
        record.commandTs,
        limit,
        decide,
      );
      for (const decision of step.decisions) if (decision.next !== undefined) this.#sql.upsert.run(timerColumnValues(decision.next));
      this.#sql.updatePrefixProgress.run({ ...prefix, progressKey: step.progressKey });
      return { decisions: step.decisions, done: step.done };
    }).immediate;
    this.#raiseIdleTenants =
      options.raiseIdleTenants ??
      ((tenantIds) => {
        try {
          this.raiseDueTenants(tenantIds);
        } catch {
          // Left for a later poll.
        }
      });
  }

  #prefixCancelOf(tenantId: string, serviceCallId: string): number | null {
    return this.#prefixIndex.size === 0 ? null : this.#prefixIndex.latestFor(tenantId, serviceCallId);
  }

  #loadPrefixIndex(): void {
    this.#prefixIndex = new PrefixCancelIndex(this.#sql.selectPrefixCancels.all());
  }

  /**
   * Every recorded prefix cancel (see #prefixIndex), for a writer on another connection of the file
   * (ThreadedSqliteTimerStore): it decides commands against it and adds what it records.
   */
  get prefixIndex(): PrefixCancelIndex {
    return this.#prefixIndex;
  }

  async applyCommands(commands: readonly TimerCommand[], decide: DecideCommand): Promise<CommandDecision[]> {
    try {
      return this.#write(() => this.#applyAll(commands, decide));
    } catch (error) {
      // The transaction rolled back: forget prefix cancels cached by it.
      if (this.#db.open && commands.some((c) => c.kind === "cancelPrefix")) this.#loadPrefixIndex();
      throw error;
    }
  }

  async claimDue(claim: DueClaim): Promise<DueTimer[]> {
    const { nowMs, limit, after } = claim;
    const tenants = this.#sql.selectDueTenants.all({ nowMs, limit });
    // Each candidate's share first; only when that leaves the batch short, more of those that filled
    // theirs: the same deal as reading every candidate's whole due range, at a fraction of the reads.
    const share = Math.ceil(limit / Math.max(1, tenants.length));
    const idle: string[] = [];
    const read = (tenantId: string, position: TenantDuePosition | undefined, count: number): DueTimerRow[] =>
      position === undefined
        ? this.#sql.selectTenantDue.all({ tenantId, nowMs, limit: count })
        : this.#sql.selectTenantDueAfter.all({ tenantId, nowMs, limit: count, ...position });
    const lists = tenants.map(({ tenantId }) => {
      const position = after?.get(tenantId);
      const list = read(tenantId, position, share);
      if (list.length === 0 && position === undefined) idle.push(tenantId);
      return list;
    });
    const short = limit - lists.reduce((n, list) => n + list.length, 0);
    if (short > 0) {
      lists.forEach((list, i) => {
        if (list.length < share) return;
        const last = list[list.length - 1]!;
        list.push(...read(tenants[i]!.tenantId, { dueAtMs: last.dueAtMs, serviceCallId: last.serviceCallId }, short));
      });
    }
    // A candidate with nothing due takes no place in later polls; best effort, like any stale bound.
    if (idle.length > 0) this.#raiseIdleTenants(idle);
    const rows = dealRoundRobin(lists, limit);
    const index = this.#prefixIndex;
    const none = index.size === 0;
    // The row objects are fresh: completed in place rather than copied.
    for (const row of rows as (DueTimerRow & { prefixCancelTs?: number | null })[]) {
      row.prefixCancelTs = none ? null : index.latestFor(row.tenantId, row.serviceCallId);
      if (row.repeat !== null) (row as { repeat: unknown }).repeat = parseRecurrence(row.repeat);
      if (row.delivery !== null) (row as { delivery: unknown }).delivery = deliveryOf(row.delivery);
      else delete (row as { delivery?: unknown }).delivery;
      withoutUnsetTrace(row);
    }
    return rows as unknown as DueTimer[];
  }

  async claimDeadlines(claim: DeadlineClaim): Promise<DeadlineTimer[]> {
    // One instance per file (see the class comment): the claim need not be recorded.
    return this.#sql.selectDeadlines
      .all({ nowMs: claim.nowMs, limit: claim.limit })
      .map((row) => ({ ...row, delivery: deliveryOf(row.delivery)! }));
  }

  async recordDeadlines(records: readonly DeadlineRecord[]): Promise<TimerKey[]> {
    return this.recordDeadlineRecords(records);
  }

  /** recordDeadlines without the promise, for the writer thread (which answers in order). */
  recordDeadlineRecords(records: readonly DeadlineRecord[]): TimerKey[] {
    return this.#write(() => this.#recordDeadlinesAll(records));
  }

  async nextDeadlineAt(): Promise<number | null> {
    return this.#sql.selectNextDeadlineAt.get()?.deadlineAtMs ?? null;
  }

  async recordFirings(firings: readonly Firing[]): Promise<TimerKey[]> {
    return this.#records.run(firings);
  }

  /** Records the firings of several calls in one transaction; the recorded keys of each call. */
  recordFiringCalls(calls: readonly (readonly Firing[])[]): TimerKey[][] {
    return this.#write(() => this.#recordAll(calls));
  }

  /** Sets the tenants' bounds in timer_due_tenants to their earliest due times (one transaction). */
  raiseDueTenants(tenantIds: readonly string[]): void {
    this.#write(() => this.#raiseDueTenant(tenantIds));
  }

  async unfinishedPrefixCancels(): Promise<PrefixCancelSweep[]> {
    return this.#sql.selectPrefixCancels
      .all()
      .flatMap(({ progressKey, ...cancel }) => (progressKey === null ? [] : [{ ...cancel, progressKey }]));
  }

  async sweepPrefixCancel(
    prefix: PrefixCancelKey,
    limit: number,
    decide: DecideCommand,
  ): Promise<{ decisions: CommandDecision[]; done: boolean }> {
    const { tenantId, serviceCallIdPrefix } = prefix;
    return this.#write(() => this.#sweepStep({ tenantId, serviceCallIdPrefix }, limit, decide));
  }

  async releaseClaims(): Promise<void> {
    // No claims are recorded (see the class comment).
  }

  /** Runs a write transaction and remembers whether it failed (busy, read-only, disk full). */
  #write<T>(transaction: () => T): T {
    return this.#health.track(transaction);
  }

  /**
   * Starts a background check that takes the write lock and gives it back at once (waiting at most
   * the busy time-out), so that readiness shows a database locked by another process even while
   * nothing writes (CONTRACT §16).
   */
  startHealthProbe(options: {
    readonly intervalMs: number;
    readonly timeoutMs: number;
    readonly onResult?: (error: unknown) => void;
  }): void {
    this.#health.startProbe(() => {
      this.#db.exec("BEGIN IMMEDIATE");
      this.#db.exec("ROLLBACK");
    }, options);
  }

  /** Why the store is not healthy, for the outage log. */
  get fault(): string | undefined {
    return this.#health.fault;
  }

  /**
   * timer_due_tenants holds a lower bound of each tenant's earliest due time (a cancel leaves it
   * low until a poll raises it), so the tenants are walked by bound, each one's real earliest read
   * from its due range, until no bound is below the best found. Past NEXT_DUE_WALK tenants the
   * next bound is the answer: never later than the real one, and the poll it wakes raises the
   * stale bounds it passes.
   */
  async nextDueAt(): Promise<number | null> {
    let earliest: number | null = null;
    const tenants = this.#sql.selectDueTenantBounds.all(NEXT_DUE_WALK + 1);
    for (const [walked, { tenantId, boundMs }] of tenants.entries()) {
      if (earliest !== null && boundMs >= earliest) break;
      if (walked === NEXT_DUE_WALK) return boundMs;
      const dueAtMs = this.#sql.selectTenantEarliestDue.get(tenantId)?.dueAtMs ?? null;
      if (dueAtMs !== null && (earliest === null || dueAtMs < earliest)) earliest = dueAtMs;
    }
    return earliest;
  }

  async countScheduledOf(tenantIds: readonly string[]): Promise<ReadonlyMap<string, number>> {
    return new Map(tenantIds.map((tenantId) => [tenantId, this.#sql.countScheduledOfTenant.get(tenantId)?.count ?? 0]));
  }

  async countScheduled(): Promise<number> {
    return this.#sql.countScheduled.get()?.count ?? 0;
  }

  async get(key: TimerKey): Promise<Timer | undefined> {
    const { tenantId, serviceCallId } = key;
    return timerOf(this.#sql.selectByKey.get(tenantId, serviceCallId));
  }

  isOpen(): boolean {
    return this.#db.open;
  }

  /** Whether a worker thread checkpoints the WAL (a writer on another connection then need not). */
  get checkpointsInBackground(): boolean {
    return this.#checkpointer !== undefined;
  }

  /** The connection, for the other SQLite adapters over the same file (queries, retention). */
  get database(): Database.Database {
    return this.#db;
  }

  /** Open, not locked by another process, and the last write transaction succeeded: readiness reports storage faults with this. */
  isWritable(): boolean {
    return this.#db.open && this.#health.healthy;
  }

  async close(): Promise<void> {
    this.#health.stopProbe();
    if (!this.#db.open) return;
    this.#records.flush();
    await this.#checkpointer?.stop();
    if (this.#db.open) this.#db.close();
  }
}
