import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import type { DecideCommand, DueClaim, DueCursor, DueTimer, FiredTimer, TimerStore } from "../../app/timer-store.js";
import type { Timer, TimerKey } from "../../domain/timer.js";
import type { TimerCommand } from "../../domain/timer-command.js";
import type { CommandDecision } from "../../domain/timer-rules.js";
import { WalCheckpointer } from "./wal-checkpointer.js";

export interface SqliteTimerStoreOptions {
  /** The database file; its folder is created when missing. */
  readonly path: string;
  /**
   * NORMAL (default): in WAL mode a commit survives a crash of the process (kill -9), as the OS
   * still holds the written pages; only a power loss or OS crash can lose the last commits.
   * FULL: fsync at every commit, so commits also survive a power loss, at a lower commit rate.
   */
  readonly synchronous?: "NORMAL" | "FULL";
  /** How long a statement waits for a lock held by another connection before failing. */
  readonly busyTimeoutMs?: number;
  /** The folder of drizzle-kit's SQL migrations; defaults to `drizzle/sqlite` at the package root. */
  readonly migrationsFolder?: string;
  /**
   * Checkpoint the WAL from a worker thread instead of inside the commits of this connection;
   * measured ~10 % less CPU per command on the event-loop thread. Off by default (tests).
   */
  readonly backgroundCheckpoint?: { readonly intervalMs: number; readonly onError: (message: string) => void };
}

/**
 * With background checkpoints the writer's own auto-checkpoint stays as a safety net only, should
 * the worker fall behind or die: at 50,000 pages (~200 MB of WAL).
 */
const SAFETY_NET_AUTOCHECKPOINT_PAGES = 50_000;

// src/adapters/sqlite/ and dist/adapters/sqlite/ are both three levels below the package root.
const DEFAULT_MIGRATIONS_FOLDER = fileURLToPath(new URL("../../../drizzle/sqlite", import.meta.url));

/** Opens (creating when missing) and migrates the timer database at `options.path`. */
export function openSqliteTimerStore(options: SqliteTimerStoreOptions): SqliteTimerStore {
  mkdirSync(dirname(options.path), { recursive: true });
  const db = new Database(options.path);
  try {
    db.pragma("journal_mode = WAL");
    db.pragma(`synchronous = ${options.synchronous ?? "NORMAL"}`);
    db.pragma(`busy_timeout = ${Math.trunc(options.busyTimeoutMs ?? 5000)}`);
    // 32 MB of page cache: fewer page reads when commands land at random places of a large table.
    db.pragma("cache_size = -32768");
    // wal_autocheckpoint is raised only with background checkpoints (below). No query here sorts or
    // builds a temp table, so temp_store does not matter.
    migrate(drizzle({ client: db }), { migrationsFolder: options.migrationsFolder ?? DEFAULT_MIGRATIONS_FOLDER });
    const background = options.backgroundCheckpoint;
    const checkpointer = background === undefined ? undefined : WalCheckpointer.start(options.path, background.intervalMs, background.onError);
    if (checkpointer !== undefined) db.pragma(`wal_autocheckpoint = ${SAFETY_NET_AUTOCHECKPOINT_PAGES}`);
    return new SqliteTimerStore(db, checkpointer);
  } catch (error) {
    db.close();
    throw error;
  }
}

// Aliased to the field names of Timer, so a row is a Timer without mapping.
const TIMER_COLUMNS = `
  tenant_id AS tenantId, service_call_id AS serviceCallId, state, due_at AS dueAtMs, data,
  correlation_id AS correlationId, command_ts AS commandTs, generation, registered_at AS registeredAtMs,
  reached_at AS reachedAtMs, updated_at AS updatedAtMs`;

// Only what firing needs: building row objects is most of findDue's cost in a burst.
const DUE_TIMER_COLUMNS =
  "tenant_id AS tenantId, service_call_id AS serviceCallId, due_at AS dueAtMs, generation, data, correlation_id AS correlationId";

// Queries of Scheduled timers spell `state = 'Scheduled'` literally, so the planner matches the
// partial index timer_schedules_due_idx once at prepare time instead of re-planning per binding.
const DUE_ORDER = "ORDER BY due_at, tenant_id, service_call_id LIMIT @limit";

/**
 * Timers in one SQLite table (`timer_schedules`). The hot paths use better-sqlite3 prepared
 * statements directly; drizzle defines the schema and applies the migrations.
 *
 * One instance only uses a SQLite file (the broker lease guards it, CONTRACT §6), so claims on due
 * timers are not recorded: nobody else could take them.
 */
export class SqliteTimerStore implements TimerStore {
  #lastWriteFailed = false;
  readonly #db: Database.Database;
  readonly #selectByKey: Database.Statement<[TimerKey], Timer>;
  readonly #upsert: Database.Statement<[Timer]>;
  readonly #selectDue: Database.Statement<[{ nowMs: number; limit: number }], DueTimer>;
  readonly #selectDueAfter: Database.Statement<[DueCursor & { nowMs: number; limit: number }], DueTimer>;
  readonly #markReached: Database.Statement<[FiredTimer & { reachedAtMs: number }]>;
  readonly #selectNextDueAt: Database.Statement<[], { dueAtMs: number | null }>;
  readonly #countScheduled: Database.Statement<[], { count: number }>;
  readonly #applyAll: (commands: readonly TimerCommand[], decide: DecideCommand) => CommandDecision[];
  readonly #markAll: (timers: readonly FiredTimer[], reachedAtMs: number) => TimerKey[];

  readonly #checkpointer: WalCheckpointer | undefined;

  constructor(db: Database.Database, checkpointer?: WalCheckpointer) {
    this.#db = db;
    this.#checkpointer = checkpointer;
    this.#selectByKey = db.prepare(
      `SELECT ${TIMER_COLUMNS} FROM timer_schedules WHERE tenant_id = @tenantId AND service_call_id = @serviceCallId`,
    );
    this.#upsert = db.prepare(`
      INSERT INTO timer_schedules (tenant_id, service_call_id, state, due_at, data, correlation_id,
        command_ts, generation, registered_at, reached_at, updated_at)
      VALUES (@tenantId, @serviceCallId, @state, @dueAtMs, @data, @correlationId,
        @commandTs, @generation, @registeredAtMs, @reachedAtMs, @updatedAtMs)
      ON CONFLICT (tenant_id, service_call_id) DO UPDATE SET
        state = excluded.state, due_at = excluded.due_at, data = excluded.data,
        correlation_id = excluded.correlation_id, command_ts = excluded.command_ts,
        generation = excluded.generation, registered_at = excluded.registered_at, reached_at = excluded.reached_at,
        updated_at = excluded.updated_at`);
    this.#selectDue = db.prepare(
      `SELECT ${DUE_TIMER_COLUMNS} FROM timer_schedules WHERE state = 'Scheduled' AND due_at <= @nowMs ${DUE_ORDER}`,
    );
    this.#selectDueAfter = db.prepare(`
      SELECT ${DUE_TIMER_COLUMNS} FROM timer_schedules
      WHERE state = 'Scheduled' AND due_at <= @nowMs
        AND (due_at, tenant_id, service_call_id) > (@dueAtMs, @tenantId, @serviceCallId)
      ${DUE_ORDER}`);
    this.#markReached = db.prepare(`
      UPDATE timer_schedules SET state = 'Reached', reached_at = @reachedAtMs, updated_at = @reachedAtMs
      WHERE tenant_id = @tenantId AND service_call_id = @serviceCallId AND state = 'Scheduled'
        AND due_at = @dueAtMs AND generation = @generation`);
    this.#selectNextDueAt = db.prepare(
      "SELECT min(due_at) AS dueAtMs FROM timer_schedules WHERE state = 'Scheduled'",
    );
    this.#countScheduled = db.prepare("SELECT count(*) AS count FROM timer_schedules WHERE state = 'Scheduled'");

    // IMMEDIATE takes the write lock up front: a deferred transaction that reads and then writes can
    // fail with SQLITE_BUSY at the upgrade without waiting for busy_timeout.
    this.#applyAll = db.transaction((commands: readonly TimerCommand[], decide: DecideCommand) =>
      commands.map((command) => {
        const { tenantId, serviceCallId } = command;
        const decision = decide(this.#selectByKey.get({ tenantId, serviceCallId }), command);
        if (decision.next !== undefined) this.#upsert.run(decision.next);
        return decision;
      }),
    ).immediate;
    this.#markAll = db.transaction((timers: readonly FiredTimer[], reachedAtMs: number) => {
      const marked: TimerKey[] = [];
      for (const { tenantId, serviceCallId, dueAtMs, generation } of timers) {
        if (this.#markReached.run({ tenantId, serviceCallId, dueAtMs, generation, reachedAtMs }).changes === 1) {
          marked.push({ tenantId, serviceCallId });
        }
      }
      return marked;
    }).immediate;
  }

  async applyCommands(commands: readonly TimerCommand[], decide: DecideCommand): Promise<CommandDecision[]> {
    return this.#write(() => this.#applyAll(commands, decide));
  }

  async claimDue(claim: DueClaim): Promise<DueTimer[]> {
    const { nowMs, limit, after } = claim;
    if (after === undefined) return this.#selectDue.all({ nowMs, limit });
    const { dueAtMs, tenantId, serviceCallId } = after;
    return this.#selectDueAfter.all({ nowMs, limit, dueAtMs, tenantId, serviceCallId });
  }

  async markReached(timers: readonly FiredTimer[], reachedAtMs: number): Promise<TimerKey[]> {
    return this.#write(() => this.#markAll(timers, reachedAtMs));
  }

  async releaseClaims(): Promise<void> {
    // No claims are recorded (see the class comment).
  }

  /** Runs a write transaction and remembers whether it failed (busy, read-only, disk full). */
  #write<T>(transaction: () => T): T {
    try {
      const result = transaction();
      this.#lastWriteFailed = false;
      return result;
    } catch (error) {
      this.#lastWriteFailed = true;
      throw error;
    }
  }

  async nextDueAt(): Promise<number | null> {
    return this.#selectNextDueAt.get()?.dueAtMs ?? null;
  }

  async countScheduled(): Promise<number> {
    return this.#countScheduled.get()?.count ?? 0;
  }

  async get(key: TimerKey): Promise<Timer | undefined> {
    const { tenantId, serviceCallId } = key;
    return this.#selectByKey.get({ tenantId, serviceCallId });
  }

  isOpen(): boolean {
    return this.#db.open;
  }

  /** The connection, for the other SQLite adapters over the same file (queries, retention). */
  get database(): Database.Database {
    return this.#db;
  }

  /** Open, and the last write transaction succeeded: readiness reports storage faults with this. */
  isWritable(): boolean {
    return this.#db.open && !this.#lastWriteFailed;
  }

  async close(): Promise<void> {
    if (!this.#db.open) return;
    await this.#checkpointer?.stop();
    if (this.#db.open) this.#db.close();
  }
}
