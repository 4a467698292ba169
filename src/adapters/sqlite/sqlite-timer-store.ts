import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import type Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import type {
  DeadlineClaim,
  DeadlineRecord,
  DueClaim,
  TenantDuePosition,
  DueTimer,
  Firing,
  PrefixCancelSweep,
  TimerStore,
} from "../../app/timer-store.js";
import type { DecideRules } from "../../app/command-batch.js";
import type { AppliedDecision } from "../../app/applied-decision.js";
import type { TimerRetention } from "../../app/retention/timer-retention.js";
import type { DeadlineTimer } from "../../domain/delivery-rules.js";
import { deliveryOf, withoutUnsetTrace } from "../delivery-columns.js";
import type { Timer, TimerKey } from "../../domain/timer.js";
import type { TimerCommand } from "../../domain/timer-command.js";
import type { CommandDecision } from "../../domain/command-rules.js";
import { parseRecurrence } from "../../domain/recurrence.js";
import { PrefixCancelIndex } from "../../domain/prefix-cancel.js";
import { WalCheckpointer } from "./wal-checkpointer.js";
import { dealRoundRobin } from "../../app/firing/fair-due-selection.js";
import { SqliteWriteHealth } from "./sqlite-write-health.js";
import type { Clock } from "../../app/clock.js";
import { systemClock } from "../clock/system-clock.js";
import { openSqliteConnection, SAFETY_NET_AUTOCHECKPOINT_PAGES } from "./sqlite-connection.js";
import { InlineSqliteWriter, SqliteWriterThread, type SqliteWriterHandle } from "./sqlite-writer-thread.js";
import { SqliteWriter } from "./sqlite-writer.js";
import {
  dueCandidatesJson,
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
   * Checkpoint the WAL from a worker thread instead of inside the commits of the writer, so that
   * the writer spends less CPU per command. Off by default (tests).
   */
  readonly backgroundCheckpoint?: { readonly intervalMs: number; readonly onError: (message: string) => void };
  /** What the store stamps its own records with (a prefix cancel's `updated_at`). Default: the system clock. */
  readonly clock?: Clock;
  /**
   * false: the writer runs on this thread (InlineSqliteWriter), for the model tests that reopen the
   * store thousands of times. Default true: a thread of its own (ADR-0011).
   */
  readonly writerThread?: boolean;
}

/** Tenants whose real earliest due time nextDueAt reads at most (one index seek each). */
const NEXT_DUE_WALK = 64;

// src/adapters/sqlite/ and dist/adapters/sqlite/ are both three levels below the package root.
export const DEFAULT_MIGRATIONS_FOLDER = fileURLToPath(new URL("../../../drizzle/sqlite", import.meta.url));

/**
 * Opens (creating when missing) and migrates the timer database at `options.path` on the main
 * thread's connection, then starts the writer thread on the migrated file.
 */
export async function openSqliteTimerStore(options: SqliteTimerStoreOptions): Promise<SqliteTimerStore> {
  mkdirSync(dirname(options.path), { recursive: true });
  const db = openSqliteConnection(options.path, options);
  let checkpointer: WalCheckpointer | undefined;
  try {
    // No query here sorts or builds a temp table, so temp_store does not matter.
    migrate(drizzle({ client: db }), { migrationsFolder: options.migrationsFolder ?? DEFAULT_MIGRATIONS_FOLDER });
    const background = options.backgroundCheckpoint;
    checkpointer = background === undefined ? undefined : WalCheckpointer.start(options.path, background.intervalMs, background.onError);
    const connection = {
      synchronous: options.synchronous,
      busyTimeoutMs: options.busyTimeoutMs,
      // The writer's commits would otherwise checkpoint every 1000 pages themselves; left at
      // SQLite's 1,000 pages, ingest at 1M pending fell by a fifth (ADR-0011).
      ...(checkpointer === undefined ? {} : { walAutocheckpointPages: SAFETY_NET_AUTOCHECKPOINT_PAGES }),
    };
    const writer =
      options.writerThread === false
        ? new InlineSqliteWriter(new SqliteWriter(openSqliteConnection(options.path, connection)))
        : await SqliteWriterThread.start(options.path, connection);
    return new SqliteTimerStore(db, writer, { checkpointer, clock: options.clock ?? systemClock });
  } catch (error) {
    await checkpointer?.stop();
    db.close();
    throw error;
  }
}

/**
 * Timers in one SQLite table (`timer_schedules`), the service's SQLite store (ADR-0011). Every
 * write transaction — command batches (decided there, by the application's rules: command-batch.ts),
 * firing and deadline records, sweep steps, retention — runs on the writer thread (SqliteWriter),
 * so the event loop keeps answering HTTP and the broker while a commit writes its pages and syncs;
 * each crosses the thread boundary once each way, and the writer runs them in call order. Reads
 * (claims, the next due time, counts, `get`, the queries) run on this thread's connection: in WAL
 * mode they never wait for the writer and see every commit it has answered. The hot paths use
 * better-sqlite3 prepared statements directly; drizzle defines the schema and applies the migrations.
 *
 * One instance only uses a SQLite file (the broker lease guards it, CONTRACT §6), so claims on due
 * timers are not recorded: nobody else could take them.
 */
export class SqliteTimerStore implements TimerStore {
  readonly #health = new SqliteWriteHealth();
  readonly #db: Database.Database;
  readonly #sql: SqliteTimerStatements;
  readonly #writer: SqliteWriterHandle;
  readonly #checkpointer: WalCheckpointer | undefined;
  readonly #clock: Clock;
  /**
   * Every recorded prefix cancel, for the claims' `prefixCancelTs`: loaded at open, a batch's
   * cancels joined the moment its commit is answered. (The writer decides with its own, exact copy.)
   */
  readonly #prefixIndex: PrefixCancelIndex;

  constructor(
    db: Database.Database,
    writer: SqliteWriterHandle,
    options: { readonly checkpointer?: WalCheckpointer | undefined; readonly clock?: Clock } = {},
  ) {
    this.#db = db;
    this.#writer = writer;
    this.#checkpointer = options.checkpointer;
    this.#clock = options.clock ?? systemClock;
    this.#sql = prepareTimerStatements(db);
    this.#prefixIndex = new PrefixCancelIndex(this.#sql.selectPrefixCancels.all());
  }

  /** In call order: the writer thread runs its requests in the order they were posted (one queue). */
  async applyCommands(commands: readonly TimerCommand[], rules: DecideRules): Promise<AppliedDecision[]> {
    const { decisions, cancels } = await this.#write(
      this.#writer.submit({ op: "applyCommands", commands, rules, recordedAtMs: this.#clock.now() }),
    );
    for (const cancel of cancels) this.#prefixIndex.add(cancel);
    return decisions;
  }

  async claimDue(claim: DueClaim): Promise<DueTimer[]> {
    const { nowMs, limit, after } = claim;
    // The writer keeps timer_due_tenants exact (every write that may raise a tenant's earliest due
    // time sets it in the same transaction), so a candidate with nothing left to take is one whose
    // due timers earlier polls of this chain hold: the claim has nothing to correct, and writes nothing.
    const tenants = this.#sql.selectDueTenants.all({ nowMs, limit });
    if (tenants.length === 0) return [];
    // Each candidate's share first; only when that leaves the batch short, more of those that filled
    // theirs: the same deal as reading every candidate's whole due range, at a fraction of the reads.
    const share = Math.ceil(limit / tenants.length);
    const lists = this.#readCandidates(
      tenants.map(({ tenantId }) => ({ tenantId, after: after?.get(tenantId) })),
      nowMs,
      share,
    );
    const short = limit - lists.reduce((n, list) => n + list.length, 0);
    const full = short > 0 ? lists.filter((list) => list.length >= share) : [];
    if (full.length > 0) {
      const more = this.#readCandidates(
        full.map((list) => {
          const { tenantId, dueAtMs, serviceCallId } = list[list.length - 1]!;
          return { tenantId, after: { dueAtMs, serviceCallId } };
        }),
        nowMs,
        short,
      );
      full.forEach((list, i) => list.push(...more[i]!));
    }
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

  /** Each candidate's first `share` due timers after its position, oldest first, in candidate order. */
  #readCandidates(
    candidates: readonly { tenantId: string; after: TenantDuePosition | undefined }[],
    nowMs: number,
    share: number,
  ): DueTimerRow[][] {
    const lists = new Map<string, DueTimerRow[]>(candidates.map(({ tenantId }) => [tenantId, []]));
    for (const row of this.#sql.selectCandidatesDue.all({ candidates: dueCandidatesJson(candidates), nowMs, share })) {
      lists.get(row.tenantId)!.push(row);
    }
    return [...lists.values()];
  }

  async claimDeadlines(claim: DeadlineClaim): Promise<DeadlineTimer[]> {
    // One instance per file (see the class comment): the claim need not be recorded.
    return this.#sql.selectDeadlines
      .all({ nowMs: claim.nowMs, limit: claim.limit })
      .map((row) => ({ ...row, delivery: deliveryOf(row.delivery)! }));
  }

  async recordDeadlines(records: readonly DeadlineRecord[]): Promise<TimerKey[]> {
    return this.#write(this.#writer.submit({ op: "recordDeadlines", records }));
  }

  async nextDeadlineAt(): Promise<number | null> {
    return this.#sql.selectNextDeadlineAt.get()?.deadlineAtMs ?? null;
  }

  /** Records queued back to back on the writer share one transaction (sqlite-writer.worker.ts). */
  async recordFirings(firings: readonly Firing[]): Promise<TimerKey[]> {
    return this.#write(this.#writer.submit({ op: "recordFirings", firings }));
  }

  async unfinishedPrefixCancels(): Promise<PrefixCancelSweep[]> {
    return this.#sql.selectPrefixCancels
      .all()
      .flatMap(({ progressKey, ...cancel }) => (progressKey === null ? [] : [{ ...cancel, progressKey }]));
  }

  async sweepPrefixCancel(
    prefix: PrefixCancelKey,
    limit: number,
    nowMs: number,
    historyEntries = 0,
  ): Promise<{ decisions: CommandDecision[]; done: boolean }> {
    const { tenantId, serviceCallIdPrefix } = prefix;
    return this.#write(
      this.#writer.submit({ op: "sweepPrefixCancel", prefix: { tenantId, serviceCallIdPrefix }, limit, nowMs, historyEntries }),
    );
  }

  async releaseClaims(): Promise<void> {
    // No claims are recorded (see the class comment).
  }

  /** Retention's deletes, on the writer thread like every write. */
  get retention(): TimerRetention {
    return {
      deleteFinalTimers: (cutoffMs, limit) => this.#writer.submit({ op: "deleteFinalTimers", cutoffMs, limit }),
      deletePrefixCancels: (cutoffMs, limit) => this.#writer.submit({ op: "deletePrefixCancels", cutoffMs, limit }),
    };
  }

  /**
   * Awaits a write and remembers whether it failed (busy, read-only, disk full): readiness reports
   * storage faults with this.
   */
  #write<T>(write: Promise<T>): Promise<T> {
    return this.#health.track(write);
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
    this.#health.startProbe(() => this.#writer.submit({ op: "probe" }), options);
  }

  /** Why the store is not healthy, for the outage log. */
  get fault(): string | undefined {
    return this.#writer.failure?.message ?? this.#health.fault;
  }

  /**
   * timer_due_tenants holds each tenant's earliest due time, kept by the writer; read here as a
   * lower bound only, so that an entry left too low would cost a seek rather than polls that find
   * nothing: the tenants are walked by bound, each one's real earliest read from its due range,
   * until no bound is below the best found. Past NEXT_DUE_WALK tenants the next bound is the
   * answer: never later than the real one.
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

  /** Open, and the writer thread running. */
  isOpen(): boolean {
    return this.#db.open && this.#writer.failure === undefined;
  }

  /** The connection, for the other SQLite adapters over the same file (queries, retention). */
  get database(): Database.Database {
    return this.#db;
  }

  /** Open, the writer thread running, not locked by another process, and the last write succeeded. */
  isWritable(): boolean {
    return this.isOpen() && this.#health.healthy;
  }

  async close(): Promise<void> {
    this.#health.stopProbe();
    if (!this.#db.open) return;
    // Every write sent before (at most 10 s for a write stuck in the kernel), then the thread ends.
    await this.#writer.close();
    await this.#checkpointer?.stop();
    if (this.#db.open) this.#db.close();
  }
}
