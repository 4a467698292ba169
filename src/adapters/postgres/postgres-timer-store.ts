import type pg from "pg";
import type { DecideCommand, DueClaim, DueTimer, FiredTimer, TimerStore } from "../../app/timer-store.js";
import { timerKeyString, type Timer, type TimerKey } from "../../domain/timer.js";
import type { TimerCommand } from "../../domain/timer-command.js";
import type { CommandDecision } from "../../domain/timer-rules.js";
import { migratePostgres } from "./postgres-migrations.js";
import { createPostgresPool } from "./postgres-pool.js";
import * as q from "./timer-schedules.sql.js";
import { ConcurrentInsertError, withRetry } from "./transaction-retry.js";

export interface PostgresTimerStoreOptions {
  /** `postgres://user:pass@host:port/db`; never logged (it may hold a password). */
  readonly url: string;
  /** Schema of the tables (`TIMER_DATABASE_SCHEMA`); created when missing. */
  readonly schema: string;
  /** Connections of the pool; one per concurrent store call. Default 5. */
  readonly maxConnections?: number;
  /** How long to wait for a connection before a call fails. Default 5000 ms. */
  readonly connectionTimeoutMs?: number;
  /** The folder of drizzle-kit's migrations; defaults to `drizzle/postgres` at the package root. */
  readonly migrationsFolder?: string;
  /** An idle pooled connection failed; the pool replaces it. */
  readonly onIdleError?: (error: Error) => void;
}

/** Opens a pool on the database, then creates the schema and applies the migrations (see migratePostgres). */
export async function openPostgresTimerStore(options: PostgresTimerStoreOptions): Promise<PostgresTimerStore> {
  const pool = createPostgresPool({
    url: options.url,
    schema: options.schema,
    maxConnections: options.maxConnections ?? 5,
    connectionTimeoutMs: options.connectionTimeoutMs ?? 5_000,
    onIdleError: options.onIdleError ?? (() => {}),
  });
  try {
    await migratePostgres(pool, options.schema, options.migrationsFolder);
  } catch (error) {
    await pool.end();
    throw error;
  }
  return new PostgresTimerStore(pool);
}

/** Orders keys by code point, as `COLLATE "C"` does: the order in which rows get locked. */
function compareKeys(a: TimerKey, b: TimerKey): number {
  return compareCodePoints(a.tenantId, b.tenantId) || compareCodePoints(a.serviceCallId, b.serviceCallId);
}

function compareCodePoints(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/**
 * Timers in one Postgres table (`timer_schedules` in the configured schema), shared by any number
 * of instances. Each method is one transaction; see docs/adr/0005-postgres-store.md for the
 * locking scheme. A command batch locks the rows of its keys (`SELECT … FOR UPDATE`, key order),
 * decides in memory, and writes every decision in one statement; a key that another instance
 * creates meanwhile makes the batch run again. Claims on due timers are recorded in the row.
 */
export class PostgresTimerStore implements TimerStore {
  readonly #pool: pg.Pool;
  #closed = false;
  #lastWriteFailed = false;
  /** The latest `nowMs` this store claimed at: every claim it took is on a timer due by then. */
  #latestClaimMs: number | undefined;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async applyCommands(commands: readonly TimerCommand[], decide: DecideCommand): Promise<CommandDecision[]> {
    if (commands.length === 0) return [];
    let decideError: unknown;
    const guarded: DecideCommand = (current, command) => {
      try {
        return decide(current, command);
      } catch (error) {
        decideError = error;
        throw error;
      }
    };
    return this.#write(
      () => withRetry(() => this.#transaction((client) => this.#applyBatch(client, commands, guarded))),
      // An exception of the application's decide is no storage fault.
      (error) => error !== decideError,
    );
  }

  async #applyBatch(client: pg.PoolClient, commands: readonly TimerCommand[], decide: DecideCommand): Promise<CommandDecision[]> {
    const keys = new Map<string, TimerKey>();
    for (const { tenantId, serviceCallId } of commands) keys.set(timerKeyString({ tenantId, serviceCallId }), { tenantId, serviceCallId });
    const { rows } = await client.query<Timer>({
      name: "timer-select-for-update",
      text: q.SELECT_FOR_UPDATE,
      values: [[...keys.values()].map((k) => k.tenantId), [...keys.values()].map((k) => k.serviceCallId)],
    });
    const current = new Map(rows.map((row) => [timerKeyString(row), row]));
    const existed = new Set(current.keys());
    const changed = new Map<string, Timer>();
    const decisions = commands.map((command) => {
      const key = timerKeyString(command);
      const decision = decide(current.get(key), command);
      if (decision.next !== undefined) {
        current.set(key, decision.next);
        changed.set(key, decision.next);
      }
      return decision;
    });
    if (changed.size > 0) await this.#upsert(client, [...changed.values()].sort(compareKeys), existed);
    return decisions;
  }

  async #upsert(client: pg.PoolClient, timers: readonly Timer[], existed: ReadonlySet<string>): Promise<void> {
    const column = <T>(pick: (timer: Timer) => T): T[] => timers.map(pick);
    const { rows } = await client.query<{ written: number }>({
      name: "timer-upsert-decisions",
      text: q.UPSERT_DECISIONS,
      values: [
        column((t) => t.tenantId),
        column((t) => t.serviceCallId),
        column((t) => t.state),
        column((t) => t.dueAtMs),
        column((t) => t.data),
        column((t) => t.correlationId),
        column((t) => t.commandTs),
        column((t) => t.generation),
        column((t) => t.registeredAtMs),
        column((t) => t.reachedAtMs),
        column((t) => t.updatedAtMs),
        column((t) => existed.has(timerKeyString(t))),
      ],
    });
    if (rows[0]?.written !== timers.length) throw new ConcurrentInsertError();
  }

  async claimDue(claim: DueClaim): Promise<DueTimer[]> {
    const { nowMs, limit, after, owner, leaseUntilMs } = claim;
    const values: unknown[] = [owner, leaseUntilMs, nowMs, limit];
    const query =
      after === undefined
        ? { name: "timer-claim-due", text: q.CLAIM_DUE, values }
        : { name: "timer-claim-due-after", text: q.CLAIM_DUE_AFTER, values: [...values, after.dueAtMs, after.tenantId, after.serviceCallId] };
    const { rows } = await this.#write(() => withRetry(() => this.#pool.query<DueTimer>(query)));
    this.#latestClaimMs = Math.max(this.#latestClaimMs ?? nowMs, nowMs);
    return rows;
  }

  async markReached(timers: readonly FiredTimer[], reachedAtMs: number, owner: string): Promise<TimerKey[]> {
    if (timers.length === 0) return [];
    const sorted = [...timers].sort(compareKeys);
    const { rows } = await this.#write(() =>
      withRetry(() =>
        this.#pool.query<TimerKey>({
          name: "timer-mark-reached",
          text: q.MARK_REACHED,
          values: [
            sorted.map((t) => t.tenantId),
            sorted.map((t) => t.serviceCallId),
            sorted.map((t) => t.dueAtMs),
            sorted.map((t) => t.generation),
            reachedAtMs,
            owner,
          ],
        }),
      ),
    );
    // In the order asked for, once per key.
    const marked = new Set(rows.map(timerKeyString));
    const result: TimerKey[] = [];
    for (const { tenantId, serviceCallId } of timers) {
      const key = timerKeyString({ tenantId, serviceCallId });
      if (!marked.delete(key)) continue;
      result.push({ tenantId, serviceCallId });
    }
    return result;
  }

  async releaseClaims(owner: string, timers?: readonly TimerKey[]): Promise<void> {
    if (timers === undefined) {
      // Claims taken by an earlier process under the same owner name could be on any due timer.
      const dueBy = this.#latestClaimMs ?? Number.MAX_SAFE_INTEGER;
      await this.#write(() => withRetry(() => this.#pool.query(q.RELEASE_ALL_CLAIMS, [owner, dueBy])));
      return;
    }
    if (timers.length === 0) return;
    const sorted = [...timers].sort(compareKeys);
    const values = [owner, sorted.map((t) => t.tenantId), sorted.map((t) => t.serviceCallId)];
    await this.#write(() => withRetry(() => this.#pool.query({ name: "timer-release-claims", text: q.RELEASE_CLAIMS, values })));
  }

  async nextDueAt(): Promise<number | null> {
    const { rows } = await this.#pool.query<{ dueAtMs: number | null }>({ name: "timer-next-due-at", text: q.NEXT_DUE_AT });
    return rows[0]?.dueAtMs ?? null;
  }

  async countScheduled(): Promise<number> {
    const { rows } = await this.#pool.query<{ count: number }>(q.COUNT_SCHEDULED);
    return rows[0]?.count ?? 0;
  }

  async get(key: TimerKey): Promise<Timer | undefined> {
    const { rows } = await this.#pool.query<Timer>({ name: "timer-select-by-key", text: q.SELECT_BY_KEY, values: [key.tenantId, key.serviceCallId] });
    return rows[0];
  }

  /** Open, and the last write succeeded: readiness reports storage faults with this. */
  isWritable(): boolean {
    return !this.#closed && !this.#lastWriteFailed;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end();
  }

  /** Runs `work` in one transaction on one connection: committed when it resolves, rolled back when it throws. */
  async #transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect();
    let broken: unknown;
    try {
      await client.query("BEGIN");
      try {
        const result = await work(client);
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch((rollbackError: unknown) => {
          broken = rollbackError;
        });
        throw error;
      }
    } finally {
      // A connection whose rollback failed is in an unknown state: close it instead of reusing it.
      client.release(broken === undefined ? undefined : true);
    }
  }

  /** Runs a write and remembers whether it failed (readiness). */
  async #write<T>(write: () => Promise<T>, isStorageFault: (error: unknown) => boolean = () => true): Promise<T> {
    try {
      const result = await write();
      this.#lastWriteFailed = false;
      return result;
    } catch (error) {
      if (isStorageFault(error)) this.#lastWriteFailed = true;
      throw error;
    }
  }
}
