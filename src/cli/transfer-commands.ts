import { once } from "node:events";
import { createReadStream, createWriteStream, renameSync, rmSync } from "node:fs";
import { createInterface } from "node:readline";
import type { Writable } from "node:stream";
import { ConfigError, loadConfig, type TimerServiceConfig } from "../config/config.js";
import { isTenantId } from "../app/commands/command-text.js";
import { exportTimers } from "../app/transfer/export-timers.js";
import { ImportLineError, importTimers } from "../app/transfer/import-timers.js";
import { openTimerTransfer } from "../adapters/open-timer-transfer.js";
import { CronerCalendar } from "../adapters/cron/croner-calendar.js";
import { UsageError } from "./usage-error.js";

/**
 * `export`, `import` and `backup` (CONTRACT §18): they open the store the service's variables name
 * (TIMER_STORE, TIMER_DB_PATH, TIMER_DATABASE_URL, TIMER_DATABASE_SCHEMA, …), on connections of
 * their own. Results go to standard output as one JSON line; what went where to standard error.
 */

export interface TransferFlags {
  readonly tenant?: string | undefined;
  readonly out?: string | undefined;
  readonly in?: string | undefined;
  /** export: each timer's history too (CONTRACT §19); the previous release cannot import it. */
  readonly history?: boolean | undefined;
}

function serviceConfig(): TimerServiceConfig {
  try {
    return loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.message);
    throw error;
  }
}

export async function exportCommand(flags: TransferFlags): Promise<number> {
  if (flags.in !== undefined) throw new UsageError("export writes; --in belongs to import");
  if (flags.tenant !== undefined && !isTenantId(flags.tenant)) {
    throw new UsageError(`--tenant "${flags.tenant}" must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`);
  }
  const config = serviceConfig();
  const { transfer, label } = await openTimerTransfer(config, { create: false });
  // A file is written beside its name and renamed when complete: a cut-off export never looks whole.
  const partial = flags.out === undefined ? undefined : `${flags.out}.partial-${process.pid}`;
  const sink: Writable = partial === undefined ? process.stdout : createWriteStream(partial, { flags: "wx" });
  // Errors (a missing folder, a closed pipe, a full disk) reach the write's callback; without a
  // listener the stream's 'error' event would end the process with a stack trace instead.
  sink.on("error", () => undefined);
  try {
    const summary = await exportTimers(transfer, {
      ...(flags.tenant === undefined ? {} : { tenantId: flags.tenant }),
      nowMs: Date.now(),
      history: flags.history === true,
      // Each chunk waits for its write: backpressure, and a failed write fails the export.
      write: (chunk) => new Promise<void>((resolve, reject) => sink.write(chunk, (error) => (error ? reject(error) : resolve()))),
    });
    if (partial !== undefined) {
      sink.end();
      await once(sink, "close");
      renameSync(partial, flags.out!);
    }
    process.stderr.write(
      `exported ${summary.timers} timers and ${summary.prefixCancels} prefix cancels from ${label} to ${flags.out ?? "standard output"}\n`,
    );
    return 0;
  } catch (error) {
    if (partial !== undefined) {
      sink.destroy();
      rmSync(partial, { force: true });
    }
    throw error;
  } finally {
    await transfer.close();
  }
}

export async function importCommand(flags: TransferFlags): Promise<number> {
  if (flags.out !== undefined || flags.tenant !== undefined || flags.history !== undefined) {
    throw new UsageError("import takes only --in FILE (default: standard input)");
  }
  const config = serviceConfig();
  const input = flags.in === undefined ? process.stdin : createReadStream(flags.in);
  // Opened before the store, so that a missing file is reported without touching the database.
  if (flags.in !== undefined) await once(input, "open");
  const { transfer, label } = await openTimerTransfer(config, { create: true });
  try {
    const lines = createInterface({ input, crlfDelay: Infinity });
    const summary = await importTimers(transfer, lines, { calendar: new CronerCalendar() });
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    process.stderr.write(`imported ${flags.in ?? "standard input"} into ${label}\n`);
    return 0;
  } catch (error) {
    if (error instanceof ImportLineError) {
      const { created, replaced, kept, prefixCancels } = error.imported;
      const before = created + replaced + kept + prefixCancels.created + prefixCancels.replaced + prefixCancels.kept;
      throw new Error(
        `${error.message}\nnothing of that line's batch was written${before === 0 ? "" : `; the batches before it were (${JSON.stringify({ created, replaced, kept, prefixCancels })}), and importing the fixed file again keeps them`}`,
        { cause: error },
      );
    }
    throw error;
  } finally {
    await transfer.close();
    if (flags.in !== undefined) input.destroy();
  }
}

export async function backupCommand(flags: TransferFlags): Promise<number> {
  if (flags.out === undefined) throw new UsageError("backup needs --out FILE");
  if (flags.in !== undefined || flags.tenant !== undefined || flags.history !== undefined) {
    throw new UsageError("backup takes only --out FILE");
  }
  const config = serviceConfig();
  if (config.storage.store !== "sqlite") {
    throw new Error(
      "backup copies a SQLite store; with TIMER_STORE=postgres back the database up with Postgres' own tools " +
        `(pg_dump --schema=${config.storage.databaseSchema}, or your provider's snapshots and point-in-time recovery)`,
    );
  }
  const { backupSqliteStore } = await import("../adapters/sqlite/sqlite-backup.js");
  const backup = backupSqliteStore(config.dbPath, flags.out);
  process.stdout.write(`${JSON.stringify(backup)}\n`);
  process.stderr.write(`backed up sqlite ${config.dbPath} to ${backup.path}\n`);
  return 0;
}
