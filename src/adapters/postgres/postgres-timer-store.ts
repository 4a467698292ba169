import type pg from "pg";
import type {
  DeadlineClaim,
  DeadlineRecord,
  DueClaim,
  DueCursor,
  DueTimer,
  Firing,
  PrefixCancelSweep,
  TimerStore,
} from "../../app/timer-store.js";
import type { DeadlineTimer } from "../../domain/delivery-rules.js";
import type { HistoryAppend } from "../../domain/timer-history.js";
import { deliveryOf, withTracking } from "../delivery-columns.js";
import { PrefixCancelIndex, prefixUpperBound, type PrefixCancel } from "../../domain/prefix-cancel.js";
import { parseRecurrence } from "../../domain/recurrence.js";
import { timerKeyString, type Timer, type TimerKey } from "../../domain/timer.js";
import type { TimerCommand } from "../../domain/timer-command.js";
import type { CommandDecision } from "../../domain/command-rules.js";
import { compareCodePoints, compareTimerKeys } from "../../domain/code-point-order.js";
import { perTenantReadLimit } from "../../app/firing/fair-due-selection.js";
import { migratePostgres } from "./postgres-migrations.js";
import { lowerDueTenants } from "./due-tenant-bounds.js";
import { GrowthAnalyzer } from "./growth-analyzer.js";
import { createPostgresPool, inTransaction } from "./postgres-pool.js";
import * as q from "./timer-schedules.sql.js";
import { ConcurrentInsertError, withRetry } from "./transaction-retry.js";
import { isConnectionFault } from "./connection-fault.js";
import { withDeadline } from "../storage/storage-deadline.js";
import { StorageProbe } from "../storage/storage-probe.js";
import { checkWritable } from "./postgres-write-probe.js";
import { appendHistory, appendRecorded } from "./postgres-timer-history.js";
import type { Clock } from "../../app/clock.js";
import { systemClock } from "../clock/system-clock.js";
import { commandKeys, decideCommandBatch, decideSweepStep, quotaTenants, type DecideRules } from "../../app/command-batch.js";

export interface PostgresTimerStoreOptions {
  /** `postgres://user:pass@host:port/db`; never logged (it may hold a password). */
  readonly url: string;
  /** Schema of the tables (`TIMER_DATABASE_SCHEMA`); created when missing. */
  readonly schema: string;
  /** Connections of the pool; one per concurrent store call. Default 5. */
  readonly maxConnections?: number;
  /**
   * The longest one call may take, connection and pool wait included (TIMER_DATABASE_TIMEOUT_MS);
   * past it the call fails with StorageTimeoutError. Default 10000 ms.
   */
  readonly timeoutMs?: number;
  /** Checks every `intervalMs` that the database commits a write (readiness, CONTRACT §16); off when unset. */
  readonly healthProbe?: { readonly intervalMs: number; readonly onResult?: (error: unknown) => void };
  /** The folder of drizzle-kit's migrations; defaults to `drizzle/postgres` at the package root. */
  readonly migrationsFolder?: string;
  /** An idle pooled connection failed; the pool replaces it. */
  readonly onIdleError?: (error: Error) => void;
  /** What the store stamps its own records with (a prefix cancel's `updated_at`). Default: the system clock. */
  readonly clock?: Clock;
}

/** Opens a pool on the database, then creates the schema and applies the migrations (see migratePostgres). */
export async function openPostgresTimerStore(options: PostgresTimerStoreOptions): Promise<PostgresTimerStore> {
  const pool = createPostgresPool({
    url: options.url,
    schema: options.schema,
    maxConnections: options.maxConnections ?? 5,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    onIdleError: options.onIdleError ?? (() => {}),
  });
  try {
    await migratePostgres(pool, options.schema, options.migrationsFolder);
    await warmUp(pool, options.maxConnections ?? 5);
  } catch (error) {
    await pool.end();
    throw error;
  }
  const store = new PostgresTimerStore(pool, options.timeoutMs ?? DEFAULT_TIMEOUT_MS, options.clock);
  if (options.healthProbe !== undefined) store.startHealthProbe(options.healthProbe);
  return store;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/** Opens every connection of the pool now, so that the first commands and polls do not wait for one. */
async function warmUp(pool: pg.Pool, connections: number): Promise<void> {
  const clients = await Promise.all(Array.from({ length: connections }, () => pool.connect()));
  for (const client of clients) client.release();
}

/** A row as Postgres returns it: `repeat` and `delivery` are JSON text (see recurrenceText). */
type Row<T> = Omit<T, "repeat"> & { readonly repeat: string | null };

function fromRow<T extends { readonly repeat: unknown }>(row: Row<T>): T {
  return withTracking({ ...row, repeat: row.repeat === null ? null : parseRecurrence(row.repeat) }) as unknown as T;
}

/** One firing's columns for RECORD_FIRINGS. */
interface FiringRow extends TimerKey {
  readonly dueAtMs: number;
  readonly generation: number;
  readonly state: string;
  readonly nextDueAtMs: number;
  readonly occurrence: number;
  readonly reachedAtMs: number | null;
  readonly commandTs: number;
  readonly updatedAtMs: number;
  readonly attempt: number | null;
  readonly firedAtMs: number | null;
  readonly deadlineAtMs: number | null;
  /** The entry its history gains (CONTRACT §19); absent: none. */
  readonly history: HistoryAppend | undefined;
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
  /** Settles once every applyCommands call so far has ended. */
  #lastApply: Promise<unknown> = Promise.resolve();
  #closed = false;
  #lastWriteFailed = false;
  /** The last failed write lost the connection or timed out: a successful health check clears it. */
  #lastWriteUnreachable = false;
  #probe: StorageProbe | undefined;
  /** The latest `nowMs` this store claimed at: every claim it took is on a timer due by then. */
  #latestClaimMs: number | undefined;
  readonly #statistics: GrowthAnalyzer;

  constructor(
    pool: pg.Pool,
    private readonly timeoutMs = DEFAULT_TIMEOUT_MS,
    private readonly clock: Clock = systemClock,
  ) {
    this.#pool = pool;
    this.#statistics = new GrowthAnalyzer(pool);
  }

  /** Starts the background write check that readiness follows (see StorageProbe, checkWritable). */
  startHealthProbe(options: { readonly intervalMs: number; readonly onResult?: (error: unknown) => void }): void {
    this.#probe = new StorageProbe(
      async () => {
        await checkWritable(this.#pool, this.timeoutMs);
        // A commit went through again: a write that failed only because none did is no longer a fault.
        if (this.#lastWriteUnreachable) this.#lastWriteFailed = this.#lastWriteUnreachable = false;
      },
      { intervalMs: options.intervalMs, timeoutMs: this.timeoutMs, ...(options.onResult ? { onResult: options.onResult } : {}) },
    );
    this.#probe.start();
  }

  /** Why the store is not healthy, for the outage log (no credentials: driver messages only). */
  get fault(): string | undefined {
    const error = this.#probe?.lastError;
    return error === undefined ? undefined : error instanceof Error ? error.message : String(error);
  }

  /** Bounds a read like a write (CONTRACT §16). */
  #bounded<T>(read: Promise<T>): Promise<T> {
    return withDeadline(read, this.timeoutMs, "Postgres read");
  }

  /**
   * In call order: each call's transaction begins once the call before has ended (committed or
   * failed), as on one connection; two batches in flight on two connections could otherwise commit
   * in either order. A call that timed out has ended for this order while its transaction may still
   * commit; its batch is redelivered after later ones anyway, like any batch that failed.
   */
  applyCommands(commands: readonly TimerCommand[], rules: DecideRules): Promise<CommandDecision[]> {
    const applied = this.#lastApply.then(() => this.#applyInTurn(commands, rules));
    this.#lastApply = applied.catch(() => undefined);
    return applied;
  }

  async #applyInTurn(commands: readonly TimerCommand[], rules: DecideRules): Promise<CommandDecision[]> {
    if (commands.length === 0) return [];
    const { decisions, inserted } = await this.#write(() =>
      withRetry(() => inTransaction(this.#pool, (client) => this.#applyBatch(client, commands, rules))),
    );
    this.#statistics.inserted(inserted);
    return decisions;
  }

  /** The batch's decisions, and how many rows it inserted. */
  async #applyBatch(
    client: pg.PoolClient,
    commands: readonly TimerCommand[],
    rules: DecideRules,
  ): Promise<{ decisions: CommandDecision[]; inserted: number }> {
    const keys = commandKeys(commands, rules);
    const current = new Map<string, Timer>();
    if (keys.size > 0) {
      const { rows } = await client.query<Row<Timer>>({
        name: "timer-select-for-update",
        text: q.SELECT_FOR_UPDATE,
        values: [[...keys.values()].map((k) => k.tenantId), [...keys.values()].map((k) => k.serviceCallId)],
      });
      for (const row of rows) current.set(timerKeyString(row), fromRow<Timer>(row));
    }
    const tenants = [...new Set(commands.map((c) => c.tenantId))];
    const { rows: cancels } = await client.query<PrefixCancel>({
      name: "timer-select-prefix-cancels",
      text: q.SELECT_PREFIX_CANCELS,
      values: [tenants],
    });
    const quoted = quotaTenants(commands, rules);
    let scheduledCounts: Map<string, number> | undefined;
    if (quoted.length > 0) {
      const { rows } = await client.query<{ tenantId: string; count: number }>({
        name: "timer-count-scheduled-of",
        text: q.COUNT_SCHEDULED_OF,
        values: [quoted],
      });
      scheduledCounts = new Map(rows.map((row) => [row.tenantId, Number(row.count)]));
    }
    const existed = new Set(current.keys());
    const batch = decideCommandBatch(commands, rules, {
      prefixIndex: new PrefixCancelIndex(cancels),
      stored: (key) => current.get(timerKeyString(key)),
      ...(scheduledCounts === undefined ? {} : { scheduledCounts }),
    });
    const inserted = batch.changed.filter((timer) => !existed.has(timerKeyString(timer))).length;
    if (batch.changed.length > 0) {
      await this.#upsert(client, [...batch.changed].sort(compareTimerKeys), existed);
      await lowerDueTenants(client, batch.changed);
    }
    // After the upsert: a new timer's row, whose insert holds its key, exists before its first entry.
    await appendHistory(client, batch.history, rules.historyEntries ?? 0);
    if (batch.cancels.length > 0) {
      // One row per prefix: the batch's last (newest) cancel of it.
      const recorded = [...new Map(batch.cancels.map((c) => [`${c.tenantId}\u0000${c.serviceCallIdPrefix}`, c])).values()];
      await client.query({
        name: "timer-upsert-prefix-cancels",
        text: q.UPSERT_PREFIX_CANCELS,
        // updated_at is when it was recorded, for retention: the store's clock, as in SQLite.
        values: [
          recorded.map((c) => c.tenantId),
          recorded.map((c) => c.serviceCallIdPrefix),
          recorded.map((c) => c.commandTs),
          this.clock.now(),
        ],
      });
    }
    return { decisions: batch.decisions, inserted };
  }

  async #upsert(client: pg.PoolClient, timers: readonly Timer[], existed: ReadonlySet<string>): Promise<void> {
    const { rows } = await client.query<{ written: number }>({
      name: "timer-upsert-decisions",
      text: q.UPSERT_DECISIONS,
      values: [...q.timerColumnArrays(timers), timers.map((t) => existed.has(timerKeyString(t)))],
    });
    if (rows[0]?.written !== timers.length) throw new ConcurrentInsertError();
  }

  async claimDue(claim: DueClaim): Promise<DueTimer[]> {
    const { nowMs, limit, after, owner, leaseUntilMs } = claim;
    const { rows: candidates } = await this.#bounded(
      this.#pool.query<{ tenantId: string }>({ name: "timer-select-due-tenants", text: q.SELECT_DUE_TENANTS, values: [nowMs, limit] }),
    );
    this.#latestClaimMs = Math.max(this.#latestClaimMs ?? nowMs, nowMs);
    if (candidates.length === 0) return [];
    const tenants = candidates.map((c) => c.tenantId);
    const positions = [...(after ?? new Map())];
    const { rows } = await this.#write(() =>
      withRetry(() =>
        this.#pool.query<Row<DueTimer>>({
          name: "timer-claim-due-fair",
          text: q.CLAIM_DUE_FAIR,
          values: [
            owner,
            leaseUntilMs,
            nowMs,
            limit,
            tenants,
            positions.map(([tenantId]) => tenantId),
            positions.map(([, p]) => p.dueAtMs),
            positions.map(([, p]) => p.serviceCallId),
            perTenantReadLimit(limit, tenants.length),
          ],
        }),
      ),
    );
    const timers = rows.map((row) => fromRow<DueTimer>(row));
    await this.#raiseIdleTenants(tenants, after, timers);
    return timers;
  }

  /**
   * Candidates that had nothing due (and no timers taken by the chain) get their true earliest due
   * time, so that they stop taking candidate places. Best effort: a stale lower bound costs a
   * wasted look-up per poll, never a timer.
   */
  async #raiseIdleTenants(tenants: readonly string[], after: DueCursor | undefined, timers: readonly DueTimer[]): Promise<void> {
    const served = new Set(timers.map((t) => t.tenantId));
    await this.#raiseDueTenants(tenants.filter((tenantId) => !served.has(tenantId) && after?.has(tenantId) !== true));
  }

  async #raiseDueTenants(tenants: readonly string[]): Promise<void> {
    if (tenants.length === 0) return;
    try {
      await inTransaction(this.#pool, async (client) => {
        const { rows } = await client.query<{ tenantId: string }>({
          name: "timer-try-lock-due-tenants",
          text: q.TRY_LOCK_DUE_TENANTS,
          values: [[...tenants].sort(compareCodePoints)],
        });
        if (rows.length === 0) return;
        await client.query({ name: "timer-raise-due-tenants", text: q.RAISE_DUE_TENANTS, values: [rows.map((r) => r.tenantId)] });
      });
    } catch {
      // Left for a later poll: a stale lower bound costs a look-up, never a timer.
    }
  }

  async recordFirings(firings: readonly Firing[], owner: string): Promise<TimerKey[]> {
    const recorded = await this.#recordFirings(
      firings.map(({ tenantId, serviceCallId, dueAtMs, generation, next, history }) => ({
        tenantId,
        serviceCallId,
        dueAtMs,
        generation,
        state: next.state,
        nextDueAtMs: next.dueAtMs,
        occurrence: next.occurrence,
        reachedAtMs: next.reachedAtMs,
        commandTs: next.commandTs,
        updatedAtMs: next.updatedAtMs,
        attempt: next.tracking?.attempt ?? null,
        firedAtMs: next.tracking?.firedAtMs ?? null,
        deadlineAtMs: next.tracking?.deadlineAtMs ?? null,
        history,
      })),
      owner,
    );
    // The tenants fired from have a later earliest due time now (or none).
    await this.#raiseDueTenants([...new Set(recorded.map((key) => key.tenantId))]);
    return recorded;
  }

  async claimDeadlines(claim: DeadlineClaim): Promise<DeadlineTimer[]> {
    const { nowMs, limit, owner, leaseUntilMs } = claim;
    const { rows } = await this.#write(() =>
      withRetry(() =>
        this.#pool.query<Omit<DeadlineTimer, "delivery"> & { delivery: string }>({
          name: "timer-claim-deadlines",
          text: q.CLAIM_DEADLINES,
          values: [owner, leaseUntilMs, nowMs, limit],
        }),
      ),
    );
    return rows.map((row) => ({ ...row, delivery: deliveryOf(row.delivery)! }));
  }

  async recordDeadlines(records: readonly DeadlineRecord[], owner: string): Promise<TimerKey[]> {
    if (records.length === 0) return [];
    const sorted = [...records].sort(compareTimerKeys);
    const column = <T>(pick: (record: DeadlineRecord) => T): T[] => sorted.map(pick);
    const rows = await this.#recordUpdate(
      {
        name: "timer-record-deadlines",
        text: q.RECORD_DEADLINES,
        values: [
          owner,
          column((r) => r.tenantId),
          column((r) => r.serviceCallId),
          column((r) => r.attempt),
          column((r) => r.deadlineAtMs),
          column((r) => r.next.state),
          column((r) => r.next.attempt),
          column((r) => r.next.reachedAtMs),
          column((r) => r.next.deadlineAtMs),
          column((r) => r.next.lastReason),
          column((r) => r.next.updatedAtMs),
        ],
      },
      sorted,
    );
    const recorded = new Set(rows.map(timerKeyString));
    return records.filter((r) => recorded.has(timerKeyString(r))).map(({ tenantId, serviceCallId }) => ({ tenantId, serviceCallId }));
  }

  async nextDeadlineAt(): Promise<number | null> {
    const { rows } = await this.#bounded(
      this.#pool.query<{ deadlineAtMs: number | null }>({ name: "timer-next-deadline-at", text: q.NEXT_DEADLINE_AT }),
    );
    return rows[0]?.deadlineAtMs ?? null;
  }

  async #recordFirings(firings: readonly FiringRow[], owner: string): Promise<TimerKey[]> {
    if (firings.length === 0) return [];
    const sorted = [...firings].sort(compareTimerKeys);
    const column = <T>(pick: (firing: FiringRow) => T): T[] => sorted.map(pick);
    const rows = await this.#recordUpdate(
      {
        name: "timer-record-firings",
        text: q.RECORD_FIRINGS,
        values: [
          owner,
          column((f) => f.tenantId),
          column((f) => f.serviceCallId),
          column((f) => f.dueAtMs),
          column((f) => f.generation),
          column((f) => f.state),
          column((f) => f.nextDueAtMs),
          column((f) => f.occurrence),
          column((f) => f.reachedAtMs),
          column((f) => f.commandTs),
          column((f) => f.updatedAtMs),
          column((f) => f.attempt),
          column((f) => f.firedAtMs),
          column((f) => f.deadlineAtMs),
        ],
      },
      sorted,
    );
    // In the order asked for, once per key.
    const recorded = new Set(rows.map(timerKeyString));
    const result: TimerKey[] = [];
    for (const { tenantId, serviceCallId } of firings) {
      if (!recorded.delete(timerKeyString({ tenantId, serviceCallId }))) continue;
      result.push({ tenantId, serviceCallId });
    }
    return result;
  }

  /**
   * Runs a record statement (RECORD_FIRINGS, RECORD_DEADLINES: it returns the keys it updated), then
   * appends the history entries of those keys. The append is a statement of its own, in the same
   * transaction: its snapshot is taken once the update holds the rows' locks, so it sees an append
   * another writer of the same timer committed while the update waited. Without entries, the update
   * runs alone.
   */
  async #recordUpdate(
    update: pg.QueryConfig,
    records: readonly (TimerKey & { readonly history?: HistoryAppend | undefined })[],
  ): Promise<TimerKey[]> {
    if (!records.some((r) => r.history !== undefined)) {
      return (await this.#write(() => withRetry(() => this.#pool.query<TimerKey>(update)))).rows;
    }
    return this.#write(() =>
      withRetry(() =>
        inTransaction(this.#pool, async (client) => {
          const { rows } = await client.query<TimerKey>(update);
          await appendRecorded(client, records, new Set(rows.map(timerKeyString)));
          return rows;
        }),
      ),
    );
  }

  async unfinishedPrefixCancels(): Promise<PrefixCancelSweep[]> {
    const { rows } = await this.#bounded(
      this.#pool.query<PrefixCancelSweep>({ name: "timer-unfinished-prefix-cancels", text: q.SELECT_UNFINISHED_PREFIX_CANCELS }),
    );
    return rows;
  }

  async sweepPrefixCancel(
    prefix: Pick<PrefixCancel, "tenantId" | "serviceCallIdPrefix">,
    limit: number,
    nowMs: number,
    historyEntries = 0,
  ): Promise<{ readonly decisions: CommandDecision[]; readonly done: boolean }> {
    const { tenantId, serviceCallIdPrefix } = prefix;
    return this.#write(() =>
      withRetry(() =>
        inTransaction(this.#pool, async (client) => {
          const { rows: records } = await client.query<{ commandTs: number; progressKey: string | null }>({
            name: "timer-lock-prefix-cancel",
            text: q.LOCK_PREFIX_CANCEL,
            values: [tenantId, serviceCallIdPrefix],
          });
          const record = records[0];
          if (record === undefined || record.progressKey === null) return { decisions: [], done: true };
          const { rows } = await client.query<Row<Timer>>({
            name: "timer-select-prefix-sweep-batch",
            text: q.SELECT_PREFIX_SWEEP_BATCH,
            values: [tenantId, serviceCallIdPrefix, prefixUpperBound(serviceCallIdPrefix), record.progressKey, limit],
          });
          const step = decideSweepStep(
            rows.map((row) => fromRow<Timer>(row)),
            record.commandTs,
            limit,
            nowMs,
            historyEntries,
          );
          const changed = step.decisions.flatMap((d) => (d.next === undefined ? [] : [d.next]));
          if (changed.length > 0) await this.#upsert(client, changed, new Set(changed.map(timerKeyString)));
          await appendHistory(client, step.history, historyEntries);
          await client.query({
            name: "timer-update-prefix-progress",
            text: q.UPDATE_PREFIX_PROGRESS,
            values: [tenantId, serviceCallIdPrefix, step.progressKey],
          });
          const { decisions, done } = step;
          return { decisions, done };
        }),
      ),
    );
  }

  async releaseClaims(owner: string, timers?: readonly TimerKey[]): Promise<void> {
    if (timers === undefined) {
      // Claims taken by an earlier process under the same owner name could be on any due timer.
      const dueBy = this.#latestClaimMs ?? Number.MAX_SAFE_INTEGER;
      await this.#write(() => withRetry(() => this.#pool.query(q.RELEASE_ALL_CLAIMS, [owner, dueBy])));
      return;
    }
    if (timers.length === 0) return;
    const sorted = [...timers].sort(compareTimerKeys);
    const values = [owner, sorted.map((t) => t.tenantId), sorted.map((t) => t.serviceCallId)];
    await this.#write(() => withRetry(() => this.#pool.query({ name: "timer-release-claims", text: q.RELEASE_CLAIMS, values })));
  }

  async nextDueAt(): Promise<number | null> {
    const { rows } = await this.#bounded(this.#pool.query<{ dueAtMs: number | null }>({ name: "timer-next-due-at", text: q.NEXT_DUE_AT }));
    return rows[0]?.dueAtMs ?? null;
  }

  async countScheduledOf(tenantIds: readonly string[]): Promise<ReadonlyMap<string, number>> {
    const { rows } = await this.#bounded(
      this.#pool.query<{ tenantId: string; count: number }>({
        name: "timer-count-scheduled-of",
        text: q.COUNT_SCHEDULED_OF,
        values: [tenantIds],
      }),
    );
    return new Map(rows.map((row) => [row.tenantId, Number(row.count)]));
  }

  async countScheduled(): Promise<number> {
    const { rows } = await this.#bounded(this.#pool.query<{ count: number }>(q.COUNT_SCHEDULED));
    return rows[0]?.count ?? 0;
  }

  async get(key: TimerKey): Promise<Timer | undefined> {
    const { rows } = await this.#bounded(
      this.#pool.query<Row<Timer>>({ name: "timer-select-by-key", text: q.SELECT_BY_KEY, values: [key.tenantId, key.serviceCallId] }),
    );
    return rows[0] === undefined ? undefined : fromRow<Timer>(rows[0]);
  }

  /** Open, answering the health check, and the last write succeeded: readiness reports storage faults with this. */
  isWritable(): boolean {
    return !this.#closed && !this.#lastWriteFailed && this.#probe?.healthy !== false;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#probe?.stop();
    // Ending a connection to a peer that stopped answering waits for its goodbye: bounded too.
    await withDeadline(this.#pool.end(), this.timeoutMs, "closing the Postgres pool").catch(() => undefined);
  }

  /** Runs a write within the time-out and remembers whether it failed (readiness). */
  async #write<T>(write: () => Promise<T>): Promise<T> {
    try {
      const result = await withDeadline(write(), this.timeoutMs, "Postgres write");
      // After a time-out only the health check, which always writes, says writes commit again: a
      // call that wrote nothing (a claim with nothing due) commits at once on a primary whose every
      // real commit waits for a synchronous standby it no longer has.
      if (!this.#lastWriteUnreachable || this.#probe === undefined) this.#lastWriteFailed = this.#lastWriteUnreachable = false;
      return result;
    } catch (error) {
      this.#lastWriteFailed = true;
      this.#lastWriteUnreachable = isConnectionFault(error);
      throw error;
    }
  }
}
