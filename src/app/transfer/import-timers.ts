import type { RecurrenceCalendar } from "../../domain/recurrence.js";
import { timerKeyString } from "../../domain/timer.js";
import type { ImportCounts, TimerTransfer, TransferCounts, TransferRecord } from "./timer-transfer.js";
import { decodeHeader, decodeRecord, TransferLineError } from "./transfer-lines.js";

/** Lines per transaction: large enough to amortize a commit, small enough to bound memory and lock time. */
const IMPORT_BATCH_LINES = 1_000;

export interface ImportSummary extends ImportCounts {
  /** Lines read, the header included. */
  readonly lines: number;
}

/**
 * Reads an export (CONTRACT §18) and writes it into `transfer` a batch at a time, the next batch
 * read while the last one is written. Every line of a batch is checked before the batch is written, so a bad line leaves nothing of its batch behind
 * (earlier batches stay: importing the fixed file again keeps them, by §3.2's rule). A key that
 * appears twice in one batch keeps the line with the newer `commandTs`, as two imports would.
 * Throws TransferLineError for the first bad line, `imported` holding what earlier batches did.
 */
export async function importTimers(
  transfer: TimerTransfer,
  lines: AsyncIterable<string>,
  options: { readonly batchLines?: number; readonly calendar?: RecurrenceCalendar } = {},
): Promise<ImportSummary> {
  const batchLines = options.batchLines ?? IMPORT_BATCH_LINES;
  const totals = new Totals();
  let lineNumber = 0;
  let batch = new Batch();
  // The batch being written while the next one is read and checked: the store's work and this
  // process's parsing overlap. At most two batches are in memory.
  let writing: Promise<void> = Promise.resolve();
  const write = async (full: Batch): Promise<void> => {
    await writing;
    writing = transfer.importBatch(full.records()).then((counts) => totals.add(counts, full.duplicates));
    // Marked as handled: a failure surfaces at the next await of `writing`, not as an unhandled rejection.
    writing.catch(() => undefined);
  };
  try {
    for await (const text of lines) {
      lineNumber++;
      if (lineNumber === 1) {
        // A byte order mark, as some editors save UTF-8, is not part of the header.
        decodeHeader(text.replace(/^\uFEFF/, ""));
        continue;
      }
      // Blank lines (a file cut or joined by hand) carry nothing.
      if (text.trim() === "") continue;
      batch.add(decodeRecord(text, lineNumber, options.calendar));
      if (batch.size >= batchLines) {
        await write(batch);
        batch = new Batch();
      }
    }
    if (lineNumber === 0) decodeHeader(undefined);
    if (batch.size > 0) await write(batch);
    await writing;
  } catch (error) {
    // A bad line: the batch before it (already checked) is still written and counted; should that
    // write have failed, its error is the one to report.
    await writing;
    if (error instanceof TransferLineError) throw new ImportLineError(error, totals.summary(lineNumber));
    throw error;
  }
  return totals.summary(lineNumber);
}

/** A bad line, with what the batches before it imported. */
export class ImportLineError extends TransferLineError {
  constructor(
    error: TransferLineError,
    readonly imported: ImportSummary,
  ) {
    super(error.line, error.problem);
  }
}

/** The records of one batch, one per key (and per prefix). */
class Batch {
  readonly #byKey = new Map<string, TransferRecord>();
  /** Lines that lost to a line of the same key in this batch, by kind: counted as kept. */
  readonly duplicates = { timer: 0, prefixCancel: 0 };

  get size(): number {
    return this.#byKey.size;
  }

  add(record: TransferRecord): void {
    const key =
      record.kind === "timer"
        ? `t\u0000${timerKeyString(record.timer)}`
        : `p\u0000${record.prefixCancel.tenantId}\u0000${record.prefixCancel.serviceCallIdPrefix}`;
    const seen = this.#byKey.get(key);
    if (seen !== undefined) {
      this.duplicates[record.kind]++;
      if (commandTsOf(seen) >= commandTsOf(record)) return;
    }
    this.#byKey.set(key, record);
  }

  records(): TransferRecord[] {
    return [...this.#byKey.values()];
  }
}

function commandTsOf(record: TransferRecord): number {
  return record.kind === "timer" ? record.timer.commandTs : record.prefixCancel.commandTs;
}

class Totals {
  #timers = { created: 0, replaced: 0, kept: 0 };
  #prefixCancels = { created: 0, replaced: 0, kept: 0 };

  add(counts: ImportCounts, duplicates: { readonly timer: number; readonly prefixCancel: number }): void {
    this.#timers = sum(this.#timers, counts, duplicates.timer);
    this.#prefixCancels = sum(this.#prefixCancels, counts.prefixCancels, duplicates.prefixCancel);
  }

  summary(lines: number): ImportSummary {
    return { ...this.#timers, prefixCancels: { ...this.#prefixCancels }, lines };
  }
}

function sum(a: TransferCounts, b: TransferCounts, duplicates: number): { created: number; replaced: number; kept: number } {
  return { created: a.created + b.created, replaced: a.replaced + b.replaced, kept: a.kept + b.kept + duplicates };
}
