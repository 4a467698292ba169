import type { TimerTransfer } from "./timer-transfer.js";
import { encodeHeader, encodeRecord } from "./transfer-lines.js";

/** What an export wrote. */
export interface ExportSummary {
  readonly timers: number;
  readonly prefixCancels: number;
}

/** Lines are handed to `write` in chunks of about this many characters: one write call per chunk, not per line. */
const CHUNK_CHARS = 64 * 1024;

/**
 * Writes the header and every record of `transfer` as NDJSON (CONTRACT §18). `write` may return a
 * promise (a full pipe): the next chunk waits for it, so memory stays bounded by one chunk and the
 * adapter's page whatever the store holds.
 */
export async function exportTimers(
  transfer: TimerTransfer,
  options: {
    readonly tenantId?: string;
    readonly nowMs: number;
    /** Each timer's history too (readable by this release and later ones, not by the previous one). */
    readonly history?: boolean;
    readonly write: (chunk: string) => void | Promise<void>;
  },
): Promise<ExportSummary> {
  let chunk = `${encodeHeader({ exportedAtMs: options.nowMs, store: transfer.kind, ...(options.tenantId === undefined ? {} : { tenantId: options.tenantId }) })}\n`;
  let timers = 0;
  let prefixCancels = 0;
  const records = transfer.exportRecords({
    ...(options.tenantId === undefined ? {} : { tenantId: options.tenantId }),
    history: options.history === true,
  });
  for await (const record of records) {
    if (record.kind === "timer") timers++;
    else prefixCancels++;
    chunk += `${encodeRecord(record)}\n`;
    if (chunk.length >= CHUNK_CHARS) {
      await options.write(chunk);
      chunk = "";
    }
  }
  if (chunk.length > 0) await options.write(chunk);
  return { timers, prefixCancels };
}
