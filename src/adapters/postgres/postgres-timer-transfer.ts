import type pg from "pg";
import type { ImportCounts, TimerTransfer, TransferRecord } from "../../app/transfer/timer-transfer.js";
import { comparePrefixCancelKeys, compareTimerKeys } from "../../domain/code-point-order.js";
import { timerKeyString, type TimerKey } from "../../domain/timer.js";
import { TIMER_COLUMN_NAMES, TIMER_COLUMNS, TIMER_VALUE_COLUMNS, timerSelectList } from "../storage/timer-columns.js";
import { PREFIX_CANCEL_SELECT, timerFromRow, type TransferPrefixCancelRow, type TransferTimerRow } from "../storage/transfer-rows.js";
import { checkOut, createPostgresPool } from "./postgres-pool.js";
import { ARRAY_TYPES, timerColumnArrays } from "./timer-schedules.sql.js";
import { migratePostgres } from "./postgres-migrations.js";
import { GrowthAnalyzer } from "./growth-analyzer.js";
import { lowerDueTenants } from "./due-tenant-bounds.js";
import { HISTORY_COLUMN, replaceHistories } from "./postgres-timer-history.js";

export interface PostgresTimerTransferOptions {
  /** `postgres://user:pass@host:port/db`; never logged. */
  readonly url: string;
  readonly schema: string;
  /** TIMER_DATABASE_TIMEOUT_MS: the longest one statement may take (a page of an export, one batch). */
  readonly timeoutMs: number;
  readonly migrationsFolder?: string;
}

/** Rows per FETCH of an export: one page in memory at a time. */
const EXPORT_PAGE_ROWS = 1_000;

const UNNEST = TIMER_COLUMNS.map(({ column }, i) => `$${i + 1}::${ARRAY_TYPES[column]}`).join(", ");

/**
 * Writes a batch (one row per key): new keys are inserted, a stored row is overwritten only when its
 * command_ts is older (§3.2), its claim dropped. `xmax = 0` tells an inserted row from an updated
 * one; a kept row returns nothing (and keeps its history). One statement: the statement-level
 * triggers of timer_state_counts count the batch once.
 */
const IMPORT_TIMERS = `
  INSERT INTO timer_schedules AS t (${TIMER_COLUMN_NAMES})
  SELECT * FROM unnest(${UNNEST})
  ON CONFLICT (tenant_id, service_call_id) DO UPDATE SET
    ${TIMER_VALUE_COLUMNS.map((c) => `${c} = excluded.${c}`).join(", ")}, claimed_by = NULL, claimed_until = NULL
  WHERE t.command_ts < excluded.command_ts
  RETURNING tenant_id AS "tenantId", service_call_id AS "serviceCallId", (xmax = 0) AS created`;

/** The same for prefix cancels; a written one sweeps its prefix again from the start (progress_key ''). */
const IMPORT_PREFIX_CANCELS = `
  INSERT INTO timer_prefix_cancels AS p (tenant_id, service_call_id_prefix, command_ts, updated_at, progress_key)
  SELECT tenant_id, prefix, command_ts, updated_at, ''
  FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) AS i(tenant_id, prefix, command_ts, updated_at)
  ON CONFLICT (tenant_id, service_call_id_prefix) DO UPDATE SET
    command_ts = excluded.command_ts, updated_at = excluded.updated_at, progress_key = ''
  WHERE p.command_ts < excluded.command_ts
  RETURNING (xmax = 0) AS created`;

/** Opens a pool of its own (the service's settings), and migrates the schema as the service does at start. */
export async function openPostgresTimerTransfer(options: PostgresTimerTransferOptions): Promise<PostgresTimerTransfer> {
  const pool = createPostgresPool({
    url: options.url,
    schema: options.schema,
    maxConnections: 1,
    timeoutMs: options.timeoutMs,
    onIdleError: () => {},
  });
  try {
    await migratePostgres(pool, options.schema, options.migrationsFolder);
  } catch (error) {
    await pool.end();
    throw error;
  }
  return new PostgresTimerTransfer(pool);
}

/**
 * Export and import on a Postgres schema (CONTRACT §18). An export is one REPEATABLE READ READ ONLY
 * transaction (one snapshot, also while instances write) read through a cursor a page at a time; an
 * import batch is one transaction, written as the store writes commands: rows in key order, the due
 * tenants lowered under their shared advisory locks, counts kept by the table's triggers.
 */
export class PostgresTimerTransfer implements TimerTransfer {
  readonly kind = "postgres";
  /** An import fills the table faster than autovacuum looks at it (see GrowthAnalyzer). */
  readonly #statistics: GrowthAnalyzer;

  constructor(private readonly pool: pg.Pool) {
    this.#statistics = new GrowthAnalyzer(pool);
  }

  async *exportRecords(options: { readonly tenantId?: string; readonly history?: boolean }): AsyncIterable<TransferRecord> {
    const { client, release } = await checkOut(this.pool);
    let failed = false;
    try {
      await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
      // The reader of the export may pause (a full pipe) longer than TIMER_DATABASE_TIMEOUT_MS.
      await client.query("SET LOCAL idle_in_transaction_session_timeout = 0");
      const where = options.tenantId === undefined ? "" : "WHERE tenant_id = $1";
      const values = options.tenantId === undefined ? [] : [options.tenantId];
      const columns = `${timerSelectList({ quote: true })}${options.history === true ? `, ${HISTORY_COLUMN}` : ""}`;
      await client.query(
        `DECLARE timers NO SCROLL CURSOR FOR SELECT ${columns} FROM timer_schedules t ${where} ORDER BY tenant_id, service_call_id`,
        values,
      );
      for (;;) {
        const { rows } = await client.query<TransferTimerRow>(`FETCH ${EXPORT_PAGE_ROWS} FROM timers`);
        for (const row of rows) yield { kind: "timer", timer: timerFromRow(row) };
        if (rows.length < EXPORT_PAGE_ROWS) break;
      }
      const { rows } = await client.query<TransferPrefixCancelRow>(
        `SELECT ${PREFIX_CANCEL_SELECT(true)} FROM timer_prefix_cancels ${where} ORDER BY tenant_id, service_call_id_prefix`,
        values,
      );
      for (const row of rows) yield { kind: "prefixCancel", prefixCancel: { ...row } };
      await client.query("COMMIT");
    } catch (error) {
      failed = true;
      throw error;
    } finally {
      // Stopped early (the reader gave up) or failed: end the transaction before the connection goes back.
      const ended = await client.query("ROLLBACK").then(
        () => true,
        () => false,
      );
      release(failed || !ended);
    }
  }

  async importBatch(records: readonly TransferRecord[]): Promise<ImportCounts> {
    // Key order: two writers of the same keys lock them in one order.
    const timers = records.flatMap((r) => (r.kind === "timer" ? [r.timer] : [])).sort(compareTimerKeys);
    const cancels = records.flatMap((r) => (r.kind === "prefixCancel" ? [r.prefixCancel] : [])).sort(comparePrefixCancelKeys);
    const { client, release } = await checkOut(this.pool);
    let failed = false;
    try {
      await client.query("BEGIN");
      const written = timers.length === 0 ? [] : (await client.query<WrittenTimer>(IMPORT_TIMERS, timerColumnArrays(timers))).rows;
      // A written timer's history is the record's: the key's stored entries go, the record's come in.
      const writtenKeys = new Set(written.map(timerKeyString));
      const writtenTimers = timers.filter((timer) => writtenKeys.has(timerKeyString(timer)));
      await replaceHistories(client, writtenTimers);
      await lowerDueTenants(client, timers);
      const writtenCancels =
        cancels.length === 0
          ? []
          : (
              await client.query<{ created: boolean }>(IMPORT_PREFIX_CANCELS, [
                cancels.map((c) => c.tenantId),
                cancels.map((c) => c.serviceCallIdPrefix),
                cancels.map((c) => c.commandTs),
                cancels.map((c) => c.recordedAtMs),
              ])
            ).rows;
      await client.query("COMMIT");
      const timerCounts = counts(written, timers.length);
      this.#statistics.inserted(timerCounts.created);
      return { ...timerCounts, prefixCancels: counts(writtenCancels, cancels.length) };
    } catch (error) {
      failed = true;
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    } finally {
      release(failed);
    }
  }

  async close(): Promise<void> {
    await this.#statistics.settle();
    await this.pool.end();
  }
}

/** A row IMPORT_TIMERS wrote. */
interface WrittenTimer extends TimerKey {
  readonly created: boolean;
}

function counts(written: readonly { created: boolean }[], total: number): { created: number; replaced: number; kept: number } {
  const created = written.filter((row) => row.created).length;
  return { created, replaced: written.length - created, kept: total - written.length };
}
