import type { Timer } from "../../domain/timer.js";
import type { PrefixCancel } from "../../domain/prefix-cancel.js";

/**
 * What an export carries and an import writes (CONTRACT §18): a timer with everything needed to
 * continue it on another store, or a recorded prefix cancel (§10) that still bears on older
 * `ScheduleTimer`s. `recordedAtMs` is when the store recorded the prefix cancel: retention ages it
 * from there, so a move does not restart its clock.
 */
export type TransferRecord =
  | { readonly kind: "timer"; readonly timer: Timer }
  | { readonly kind: "prefixCancel"; readonly prefixCancel: PrefixCancel & { readonly recordedAtMs: number } };

/** What an import did with the records of one kind: §3.2's order rule decides between the last two. */
export interface TransferCounts {
  /** The key was not in the store. */
  readonly created: number;
  /** The store's record had an older `commandTs` than the line's, and the line's took its place. */
  readonly replaced: number;
  /** The store's record had a `commandTs` greater than or equal to the line's, and stays. */
  readonly kept: number;
}

/** Timers counted as `TransferCounts`, prefix cancels on their own. */
export interface ImportCounts extends TransferCounts {
  readonly prefixCancels: TransferCounts;
}

/**
 * The timers of one store, read and written whole for a move between stores (CONTRACT §18). Each
 * adapter opens connections of its own, apart from a running service's, so that an export may run
 * beside the service.
 */
export interface TimerTransfer {
  /** For the export's header: "sqlite", "postgres", "memory". */
  readonly kind: string;
  /**
   * Every timer (of `tenantId`, or of every tenant), then every recorded prefix cancel, from one
   * consistent snapshot of the store, in key order (code points), so that equal stores give equal
   * exports. Read a page at a time: memory stays bounded whatever the store holds. With `history`,
   * each timer carries its history (CONTRACT §19); without, none is read.
   */
  exportRecords(options: { readonly tenantId?: string; readonly history?: boolean }): AsyncIterable<TransferRecord>;
  /**
   * Writes one batch in one transaction (all or nothing): a record whose key the store does not
   * hold is created; one whose key it holds replaces the stored one only when the stored
   * `commandTs` is older than the record's (§3.2), else the stored one is kept; a written record's
   * history replaces the stored one (none: the timer has none). Derived tables
   * (counts per state, due tenants) follow in the same transaction; a replaced prefix cancel sweeps
   * its prefix again. A batch holds each key at most once.
   */
  importBatch(records: readonly TransferRecord[]): Promise<ImportCounts>;
  close(): Promise<void>;
}
