import type { ImportCounts, TimerTransfer, TransferRecord } from "../../app/transfer/timer-transfer.js";
import { comparePrefixCancelKeys, compareTimerKeys } from "../../domain/code-point-order.js";
import { timerKeyString, type Timer } from "../../domain/timer.js";

type PrefixCancelRecord = Extract<TransferRecord, { kind: "prefixCancel" }>["prefixCancel"];

/**
 * The transfer port over maps: the reference the SQL adapters are compared with, and the target of
 * the import's unit tests. `failOnBatch` makes the n-th batch (1, 2, …) throw, for the all-or-nothing test.
 */
export class MemoryTimerTransfer implements TimerTransfer {
  readonly kind = "memory";
  readonly timers = new Map<string, Timer>();
  readonly prefixCancels = new Map<string, PrefixCancelRecord>();
  batches = 0;

  constructor(private readonly options: { readonly failOnBatch?: number } = {}) {}

  async *exportRecords(options: { readonly tenantId?: string; readonly history?: boolean }): AsyncIterable<TransferRecord> {
    // A copy first: the snapshot does not change while the reader goes through it.
    const timers = [...this.timers.values()].filter((t) => options.tenantId === undefined || t.tenantId === options.tenantId);
    const cancels = [...this.prefixCancels.values()].filter((c) => options.tenantId === undefined || c.tenantId === options.tenantId);
    for (const timer of timers.sort(compareTimerKeys)) {
      const { history, ...withoutHistory } = timer;
      yield { kind: "timer", timer: options.history === true && history != null ? timer : withoutHistory };
    }
    cancels.sort(comparePrefixCancelKeys);
    for (const prefixCancel of cancels) yield { kind: "prefixCancel", prefixCancel };
  }

  async importBatch(records: readonly TransferRecord[]): Promise<ImportCounts> {
    if (++this.batches === this.options.failOnBatch) throw new Error(`batch ${this.batches} failed`);
    const timers = { created: 0, replaced: 0, kept: 0 };
    const prefixCancels = { created: 0, replaced: 0, kept: 0 };
    for (const record of records) {
      if (record.kind === "timer") {
        const key = timerKeyString(record.timer);
        timers[outcome(this.timers.get(key)?.commandTs, record.timer.commandTs)]++;
        if ((this.timers.get(key)?.commandTs ?? -1) < record.timer.commandTs) this.timers.set(key, record.timer);
      } else {
        const key = `${record.prefixCancel.tenantId}\u0000${record.prefixCancel.serviceCallIdPrefix}`;
        prefixCancels[outcome(this.prefixCancels.get(key)?.commandTs, record.prefixCancel.commandTs)]++;
        if ((this.prefixCancels.get(key)?.commandTs ?? -1) < record.prefixCancel.commandTs)
          this.prefixCancels.set(key, record.prefixCancel);
      }
    }
    return { ...timers, prefixCancels };
  }

  async close(): Promise<void> {}
}

function outcome(stored: number | undefined, line: number): "created" | "replaced" | "kept" {
  if (stored === undefined) return "created";
  return stored >= line ? "kept" : "replaced";
}
