import type { DeadlineRecord, Firing } from "../../app/timer-store.js";
import type { DecideRules } from "../../app/command-batch.js";
import type { TimerKey } from "../../domain/timer.js";
import type { TimerCommand } from "../../domain/timer-command.js";
import type { CommandDecision } from "../../domain/command-rules.js";
import type { PrefixCancelKey } from "./sqlite-timer-statements.js";
import type { AppliedBatch, SqliteWriter } from "./sqlite-writer.js";

/** A write the main thread asks of the writer thread: one message, one SqliteWriter call. */
export type WriterCall =
  | {
      readonly op: "applyCommands";
      readonly commands: readonly TimerCommand[];
      readonly rules: DecideRules;
      readonly recordedAtMs: number;
    }
  | { readonly op: "recordFirings"; readonly firings: readonly Firing[] }
  | { readonly op: "recordDeadlines"; readonly records: readonly DeadlineRecord[] }
  | {
      readonly op: "sweepPrefixCancel";
      readonly prefix: PrefixCancelKey;
      readonly limit: number;
      readonly nowMs: number;
      readonly historyEntries: number;
    }
  | { readonly op: "deleteFinalTimers"; readonly cutoffMs: number; readonly limit: number }
  | { readonly op: "deletePrefixCancels"; readonly cutoffMs: number; readonly limit: number }
  | { readonly op: "probe" }
  | { readonly op: "close" };

/** What each call answers. */
export interface WriterAnswers {
  readonly applyCommands: AppliedBatch;
  readonly recordFirings: TimerKey[];
  readonly recordDeadlines: TimerKey[];
  readonly sweepPrefixCancel: { decisions: CommandDecision[]; done: boolean };
  readonly deleteFinalTimers: number;
  readonly deletePrefixCancels: number;
  readonly probe: void;
  readonly close: void;
}

export type WriterRequest = WriterCall & { readonly id: number };

/** The answer to one request; a SQLite error keeps its code (SQLITE_BUSY, SQLITE_FULL, …). */
export interface WriterReply {
  readonly id: number;
  readonly result?: unknown;
  readonly error?: { readonly message: string; readonly code?: string; readonly name?: string };
}

/** Each call on the writer, typed by what it answers. */
const PERFORM: { readonly [K in WriterCall["op"]]: (writer: SqliteWriter, call: Extract<WriterCall, { op: K }>) => WriterAnswers[K] } = {
  applyCommands: (writer, call) => writer.applyCommands(call.commands, call.rules, call.recordedAtMs),
  recordFirings: (writer, call) => writer.recordFirings([call.firings])[0]!,
  recordDeadlines: (writer, call) => writer.recordDeadlines(call.records),
  sweepPrefixCancel: (writer, call) => writer.sweepPrefixCancel(call.prefix, call.limit, call.nowMs, call.historyEntries),
  deleteFinalTimers: (writer, call) => writer.deleteFinalTimers(call.cutoffMs, call.limit),
  deletePrefixCancels: (writer, call) => writer.deletePrefixCancels(call.cutoffMs, call.limit),
  probe: (writer) => writer.probe(),
  close: (writer) => writer.close(),
};

/**
 * Runs one call on `writer`: the one place a message becomes a method call, for the writer thread
 * and for the inline writer of the tests alike. Firing records are gathered across messages by the
 * thread (sqlite-writer.worker.ts); one here is a call of its own.
 */
export function performWriterCall<C extends WriterCall>(writer: SqliteWriter, call: C): WriterAnswers[C["op"]] {
  // The table's own type ties each entry to its call and answer; indexing by a generic op loses that link.
  const perform = PERFORM[call.op] as unknown as (writer: SqliteWriter, call: C) => WriterAnswers[C["op"]];
  return perform(writer, call);
}
