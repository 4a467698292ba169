import type Database from "better-sqlite3";
import type { DeadlineRecord, Firing } from "../../app/timer-store.js";
import { decideCommandBatch, decideSweepStep, firingOverriddenByPrefixCancel, quotaTenants } from "../../app/command-batch.js";
import type { DecideRules } from "../../app/command-batch.js";
import { appliedDecision, type AppliedDecision } from "../../app/applied-decision.js";
import { timerKeyString, type Timer, type TimerKey } from "../../domain/timer.js";
import type { TimerCommand } from "../../domain/timer-command.js";
import type { CommandDecision } from "../../domain/command-rules.js";
import { PrefixCancelIndex, prefixUpperBound, type PrefixCancel } from "../../domain/prefix-cancel.js";
import { compareTimerKeys } from "../../domain/code-point-order.js";
import { timerColumnValues } from "../storage/timer-columns.js";
import { SqliteTimerRetention } from "./sqlite-timer-retention.js";
import { BatchTallies } from "./batch-tallies.js";
import { prepareTimerStatements, timerOf, type PrefixCancelKey } from "./sqlite-timer-statements.js";
import { SqliteTimerHistory } from "./sqlite-timer-history.js";

/**
 * What a command batch made: the decisions (their timers reduced to what the service reads: the
 * reply crosses to the main thread), and the prefix cancels it recorded (for the reads' index).
 */
export interface AppliedBatch {
  readonly decisions: AppliedDecision[];
  readonly cancels: PrefixCancel[];
}

/**
 * The positions of `keys` in key order (the primary key's: code points). A fair claim deals its
 * timers round-robin across tenants; updated in that order, consecutive rows sit in different parts
 * of every index. In key order they share the pages they dirty. Stable: two firings of one key keep
 * their order.
 */
function inKeyOrder(keys: readonly TimerKey[]): number[] {
  return keys.map((_, i) => i).sort((i, j) => compareTimerKeys(keys[i]!, keys[j]!));
}

/**
 * The tenants of `decisions` that took a Scheduled timer out of Scheduled or moved it later: their
 * earliest due time may have risen, and timer_due_tenants must follow in the same transaction.
 */
function tenantsWithEarliestRaised(decisions: readonly CommandDecision[]): Set<string> {
  const tenants = new Set<string>();
  for (const { previous, next } of decisions) {
    if (previous?.state !== "Scheduled" || next === undefined) continue;
    if (next.state !== "Scheduled" || next.dueAtMs! > previous.dueAtMs!) tenants.add(previous.tenantId);
  }
  return tenants;
}

/**
 * Every write transaction of the SQLite store, on the writer thread's connection
 * (sqlite-writer.worker.ts). A command batch is decided here, inside its transaction, by the
 * application's rules (command-batch.ts over the domain's `decideCommand`): the batch crosses the
 * thread boundary once each way. IMMEDIATE transactions take the write lock up front: a deferred
 * one that reads and then writes can fail with SQLITE_BUSY at the upgrade without waiting.
 */
export class SqliteWriter {
  readonly #db: Database.Database;
  readonly #retention: SqliteTimerRetention;
  /**
   * Every recorded prefix cancel, for the batches' decisions and the firing records' guard. This
   * connection is the only writer of the file (CONTRACT §6), so it is exact: a batch's cancels join
   * it once the batch has committed.
   */
  readonly #prefixIndex: PrefixCancelIndex;
  readonly #apply: (
    commands: readonly TimerCommand[],
    rules: DecideRules,
    recordedAtMs: number,
  ) => { readonly decisions: CommandDecision[]; readonly cancels: PrefixCancel[] };
  readonly #sweep: (
    prefix: PrefixCancelKey,
    limit: number,
    nowMs: number,
    historyEntries: number,
  ) => { decisions: CommandDecision[]; done: boolean };
  readonly #recordFirings: (firings: readonly Firing[]) => boolean[];
  readonly #recordDeadlines: (records: readonly DeadlineRecord[]) => TimerKey[];

  constructor(db: Database.Database) {
    this.#db = db;
    const sql = prepareTimerStatements(db);
    const tallies = new BatchTallies(db);
    const history = new SqliteTimerHistory(db);
    this.#retention = new SqliteTimerRetention(db, tallies, history);
    this.#prefixIndex = new PrefixCancelIndex(sql.selectPrefixCancels.all());

    this.#apply = tallies.transaction(db, (commands: readonly TimerCommand[], rules: DecideRules, recordedAtMs: number) => {
      const tenants = quotaTenants(commands, rules);
      // The stored timer of each key read: what its upsert replaces.
      const stored = new Map<string, Timer | undefined>();
      const batch = decideCommandBatch(commands, rules, {
        prefixIndex: this.#prefixIndex,
        stored: (key) => {
          const timer = timerOf(sql.selectByKey.get(key.tenantId, key.serviceCallId));
          stored.set(timerKeyString(key), timer);
          return timer;
        },
        ...(tenants.length === 0
          ? {}
          : { scheduledCounts: new Map(tenants.map((t) => [t, sql.countScheduledOfTenant.get(t)?.count ?? 0])) }),
      });
      for (const timer of batch.changed) {
        sql.upsert.run(timerColumnValues(timer));
        tallies.changed(stored.get(timerKeyString(timer)), timer);
      }
      history.append(batch.history, rules.historyEntries ?? 0, (key) => stored.get(timerKeyString(key)) === undefined);
      for (const cancel of batch.cancels) sql.upsertPrefixCancel.run({ ...cancel, nowMs: recordedAtMs });
      sql.raiseEarliest(tenantsWithEarliestRaised(batch.decisions));
      return { decisions: batch.decisions, cancels: batch.cancels };
    }).immediate;

    this.#sweep = tallies.transaction(db, (prefix: PrefixCancelKey, limit: number, nowMs: number, historyEntries: number) => {
      const record = sql.selectPrefixCancel.get(prefix);
      if (record === undefined || record.progressKey === null) return { decisions: [], done: true };
      const rows = sql.sweepSelect(prefix.serviceCallIdPrefix, record.progressKey).all({
        tenantId: prefix.tenantId,
        from: record.progressKey === "" ? prefix.serviceCallIdPrefix : record.progressKey,
        upper: prefixUpperBound(prefix.serviceCallIdPrefix),
        limit,
      });
      const step = decideSweepStep(
        rows.map((row) => timerOf(row)!),
        record.commandTs,
        limit,
        nowMs,
        historyEntries,
      );
      for (const { previous, next } of step.decisions) {
        if (next === undefined) continue;
        sql.upsert.run(timerColumnValues(next));
        tallies.changed(previous, next);
      }
      history.append(step.history, historyEntries);
      sql.raiseEarliest(tenantsWithEarliestRaised(step.decisions));
      sql.updatePrefixProgress.run({ ...prefix, progressKey: step.progressKey });
      return { decisions: step.decisions, done: step.done };
    }).immediate;

    this.#recordFirings = tallies.transaction(db, (firings: readonly Firing[]) => {
      const recorded = new Array<boolean>(firings.length).fill(false);
      const tenants = new Set<string>();
      const index = this.#prefixIndex;
      for (const i of inKeyOrder(firings)) {
        const { tenantId, serviceCallId, dueAtMs, generation, next } = firings[i]!;
        const { state, occurrence, reachedAtMs, commandTs, updatedAtMs, tracking } = next;
        if (index.size > 0 && firingOverriddenByPrefixCancel(index.latestFor(tenantId, serviceCallId), next)) continue;
        const changes = sql.recordFiring.run(
          state,
          next.dueAtMs,
          occurrence,
          reachedAtMs,
          commandTs,
          updatedAtMs,
          tracking?.attempt ?? null,
          tracking?.firedAtMs ?? null,
          tracking?.deadlineAtMs ?? null,
          tenantId,
          serviceCallId,
          dueAtMs,
          generation,
        ).changes;
        if (changes === 1) {
          const entry = firings[i]!.history;
          if (entry !== undefined) history.appendOne(tenantId, serviceCallId, entry.entry, entry.keep);
          recorded[i] = true;
          tenants.add(tenantId);
          // A firing never completes a timer: no duration to count on either side.
          tallies.changed({ tenantId, state: "Scheduled" }, { tenantId, state, dueAtMs: next.dueAtMs });
        }
      }
      // The tenants fired from have a later earliest due time now (or none).
      sql.raiseEarliest(tenants);
      return recorded;
    }).immediate;

    this.#recordDeadlines = tallies.transaction(db, (records: readonly DeadlineRecord[]) => {
      const recorded: TimerKey[] = [];
      for (const { tenantId, serviceCallId, attempt, deadlineAtMs, next, history: entry } of records) {
        const changes = sql.recordDeadline.run({
          tenantId,
          serviceCallId,
          attempt,
          deadlineAtMs,
          state: next.state,
          nextAttempt: next.attempt,
          reachedAtMs: next.reachedAtMs,
          nextDeadlineAtMs: next.deadlineAtMs,
          lastReason: next.lastReason,
          updatedAtMs: next.updatedAtMs,
        }).changes;
        if (changes === 1) {
          if (entry !== undefined) history.appendOne(tenantId, serviceCallId, entry.entry, entry.keep);
          recorded.push({ tenantId, serviceCallId });
          // A passed deadline leaves fired_at and completed_at as they are and never completes a timer.
          tallies.changed({ tenantId, state: "Fired" }, { tenantId, state: next.state });
        }
      }
      return recorded;
    }).immediate;

    // An earlier release left entries below their tenants' timers for its claims to raise; the claims
    // here read them as they are, so they are made exact at each start (one index seek per tenant).
    const dueTenants = db.prepare<[], string>("SELECT tenant_id FROM timer_due_tenants").pluck();
    db.transaction(() => sql.raiseEarliest(dueTenants.all())).immediate();
  }

  /** TimerStore.applyCommands, decided here; `recordedAtMs` stamps the prefix cancels it records. */
  applyCommands(commands: readonly TimerCommand[], rules: DecideRules, recordedAtMs: number): AppliedBatch {
    const { decisions, cancels } = this.#apply(commands, rules, recordedAtMs);
    for (const cancel of cancels) this.#prefixIndex.add(cancel);
    // After the commit: the write lock is not held for the copying.
    return { decisions: decisions.map(appliedDecision), cancels };
  }

  sweepPrefixCancel(
    prefix: PrefixCancelKey,
    limit: number,
    nowMs: number,
    historyEntries = 0,
  ): { decisions: CommandDecision[]; done: boolean } {
    const { tenantId, serviceCallIdPrefix } = prefix;
    return this.#sweep({ tenantId, serviceCallIdPrefix }, limit, nowMs, historyEntries);
  }

  /** The firings of several calls in one transaction; the recorded keys of each call. */
  recordFirings(calls: readonly (readonly Firing[])[]): TimerKey[][] {
    const recorded = this.#recordFirings(calls.length === 1 ? calls[0]! : calls.flat());
    let offset = 0;
    return calls.map((call) => {
      const keys = call.flatMap(({ tenantId, serviceCallId }, i) => (recorded[offset + i] ? [{ tenantId, serviceCallId }] : []));
      offset += call.length;
      return keys;
    });
  }

  recordDeadlines(records: readonly DeadlineRecord[]): TimerKey[] {
    return this.#recordDeadlines(records);
  }

  deleteFinalTimers(cutoffMs: number, limit: number): number {
    return this.#retention.deleteFinalTimersNow(cutoffMs, limit);
  }

  deletePrefixCancels(cutoffMs: number, limit: number): number {
    return this.#retention.deletePrefixCancelsNow(cutoffMs, limit);
  }

  /** Takes the write lock and gives it back: fails while another process holds the file locked. */
  probe(): void {
    this.#db.exec("BEGIN IMMEDIATE");
    this.#db.exec("ROLLBACK");
  }

  close(): void {
    if (this.#db.inTransaction) this.#db.exec("ROLLBACK");
    this.#db.close();
  }
}
