import { decideCommand, scheduledDelta, withinPendingQuota, type CommandDecision } from "../domain/command-rules.js";
import { isBeyondRetention } from "../domain/retention.js";
import { timerKeyString, type Timer, type TimerKey } from "../domain/timer.js";
import type { CancelTimerCommand, KeyCommand, TimerCommand } from "../domain/timer-command.js";
import { PrefixCancelIndex, type PrefixCancel } from "../domain/prefix-cancel.js";
import type { TimerAfterFiring } from "../domain/firing-rules.js";
import { commandEntry, prefixCancelEntry, type CommandNote } from "../domain/timer-history.js";
import { decisionOutcome } from "./commands/decision-outcome.js";

/**
 * The rules every store applies the same way around the domain's decision (`decideCommand`); each
 * store keeps only how it reads and writes (prepared statements on its writer thread, one `unnest`
 * statement, a map).
 */

/**
 * What decides a command batch besides the commands and the stored timers. Plain data, so that a
 * store may decide where it writes (SQLite: on its writer thread, inside the transaction).
 */
export interface DecideRules {
  /** The application's clock when the batch was taken: `registeredAtMs`, `updatedAtMs`, … */
  readonly nowMs: number;
  /** TIMER_TENANT_MAX_PENDING (CONTRACT §12): Scheduled timers per tenant; 0 or absent: no quota. */
  readonly maxPendingPerTenant?: number;
  /** TIMER_RETENTION_HOURS in ms (CONTRACT §7): older commands are ignored unread; 0 or absent: none. */
  readonly retentionMs?: number;
  /** TIMER_HISTORY_ENTRIES (CONTRACT §19): the entries each timer keeps; 0 or absent: none are written. */
  readonly historyEntries?: number;
  /** What each command's history entry records beyond the command (its id, its trace), in command order. */
  readonly commandNotes?: readonly (CommandNote | undefined)[];
}

/** What a store reads for a batch, inside its transaction. */
export interface CommandBatchReads {
  /** The recorded prefix cancels; left as it is (the batch's own join it once committed: `cancels`). */
  readonly prefixIndex: PrefixCancelIndex;
  /** The stored timer of a key, before the batch; asked at most once per key. */
  stored(key: TimerKey): Timer | undefined;
  /** With a quota: the stored Scheduled counts of `quotaTenants(commands, rules)` (absent = 0). */
  readonly scheduledCounts?: ReadonlyMap<string, number>;
}

/** A decided batch: what to answer, and what to write. */
export interface DecidedBatch {
  /** One per command, in command order. */
  readonly decisions: CommandDecision[];
  /** The final timer of each key the batch changed. */
  readonly changed: Timer[];
  /** The prefix cancels the batch records (their sweep starts from the beginning of the prefix). */
  readonly cancels: PrefixCancel[];
  /**
   * The entries the batch appends to timers' histories (CONTRACT §19), in command order; written
   * after `changed`, so that a new timer's row exists before its first entry.
   */
  readonly history: HistoryWrite[];
}

/** One entry appended to a timer's history (an entry builder's JSON text). */
export interface HistoryWrite extends TimerKey {
  readonly entry: string;
}

const IGNORED_UNREAD: CommandDecision = Object.freeze({ outcome: "ignored", previous: undefined });

/** Beyond retention the key's history may be gone: such a command is ignored without reading (§7). */
function isStale(command: TimerCommand, rules: DecideRules): boolean {
  return (rules.retentionMs ?? 0) > 0 && isBeyondRetention(command.timestampMs, rules.nowMs, rules.retentionMs!);
}

/** The distinct keys a batch's fresh commands are about (a prefix cancel is about none), by `timerKeyString`. */
export function commandKeys(commands: readonly TimerCommand[], rules: DecideRules): Map<string, TimerKey> {
  const keys = new Map<string, TimerKey>();
  for (const command of commands) {
    if (command.kind === "cancelPrefix" || isStale(command, rules)) continue;
    const { tenantId, serviceCallId } = command;
    keys.set(timerKeyString(command), { tenantId, serviceCallId });
  }
  return keys;
}

/** The tenants whose Scheduled counts a batch's quota needs (none without a quota). */
export function quotaTenants(commands: readonly TimerCommand[], rules: DecideRules): string[] {
  if ((rules.maxPendingPerTenant ?? 0) === 0) return [];
  const tenants = new Set<string>();
  for (const command of commands) if (command.kind !== "cancelPrefix" && !isStale(command, rules)) tenants.add(command.tenantId);
  return [...tenants];
}

/** The later of two prefix-cancel timestamps, either of which may be missing. */
function newer(a: number | null | undefined, b: number | null | undefined): number | null {
  if (a === null || a === undefined) return b ?? null;
  if (b === null || b === undefined) return a;
  return Math.max(a, b);
}

/**
 * Decides a batch of commands in order, inside the store's transaction, with the domain's own
 * `decideCommand`: each command against its key's timer as the batch has left it so far; a prefix
 * cancel against the one recorded for its prefix, every other command with the newest prefix cancel
 * covering its key (including ones the batch recorded before it); the pending quota (CONTRACT §12)
 * against the stored counts plus what the batch added; commands beyond retention ignored unread.
 */
export function decideCommandBatch(commands: readonly TimerCommand[], rules: DecideRules, reads: CommandBatchReads): DecidedBatch {
  const { nowMs } = rules;
  const maxPending = rules.maxPendingPerTenant ?? 0;
  const pending = maxPending > 0 ? new Map(reads.scheduledCounts) : undefined;
  const recorded = reads.prefixIndex;
  /** The batch's own prefix cancels; created with the first. */
  let own: PrefixCancelIndex | undefined;
  const current = new Map<string, Timer | undefined>();
  const changed = new Map<string, Timer>();
  const cancels: PrefixCancel[] = [];
  const decisions = new Array<CommandDecision>(commands.length);
  const history: HistoryWrite[] = [];
  const keepHistory = (rules.historyEntries ?? 0) > 0;
  for (let i = 0; i < commands.length; i++) {
    const command = commands[i]!;
    if (isStale(command, rules)) {
      decisions[i] = IGNORED_UNREAD;
      continue;
    }
    if (command.kind === "cancelPrefix") {
      const { tenantId, serviceCallIdPrefix, timestampMs } = command;
      const prefixCancelTs = newer(recorded.get(tenantId, serviceCallIdPrefix), own?.get(tenantId, serviceCallIdPrefix));
      const decision = decideCommand(undefined, command, nowMs, { prefixCancelTs });
      if (decision.outcome === "accepted") {
        const cancel = { tenantId, serviceCallIdPrefix, commandTs: timestampMs };
        cancels.push(cancel);
        (own ??= new PrefixCancelIndex()).add(cancel);
      }
      decisions[i] = decision;
      continue;
    }
    const key = timerKeyString(command);
    const timer = current.has(key) ? current.get(key) : reads.stored(command);
    const { tenantId, serviceCallId } = command;
    const prefixCancelTs =
      recorded.size === 0 && own === undefined
        ? null
        : newer(recorded.latestFor(tenantId, serviceCallId), own?.latestFor(tenantId, serviceCallId));
    let decision = decideCommand(timer, command, nowMs, prefixCancelTs === null ? undefined : { prefixCancelTs });
    if (pending !== undefined) {
      const before = pending.get(tenantId) ?? 0;
      decision = withinPendingQuota(decision, tenantId, before, maxPending);
      pending.set(tenantId, before + scheduledDelta(decision));
    }
    if (keepHistory && (decision.next ?? timer) !== undefined) {
      history.push({
        tenantId,
        serviceCallId,
        entry: historyEntry(command, decision, rules.commandNotes?.[i], nowMs, rules.retentionMs ?? 0),
      });
    }
    if (decision.next !== undefined) {
      current.set(key, decision.next);
      changed.set(key, decision.next);
    } else if (!current.has(key)) current.set(key, timer);
    decisions[i] = decision;
  }
  return { decisions, changed: [...changed.values()], cancels, history };
}

/**
 * The history entry of a command that reached a timer (CONTRACT §19). Why it was ignored, or applied
 * without a change, is said in the words of its outcome; a history does not know the delivery count.
 */
function historyEntry(
  command: KeyCommand,
  decision: CommandDecision,
  note: CommandNote | undefined,
  nowMs: number,
  retentionMs: number,
): string {
  if (decision.outcome === "accepted") return commandEntry(nowMs, command, note, "applied");
  if (decision.outcome === "refused")
    return commandEntry(nowMs, command, note, "rejected", { code: decision.code, reason: decision.reason });
  const { outcome, reason } = decisionOutcome(command, decision, { nowMs, retentionMs, deliveryCount: 1 });
  return commandEntry(nowMs, command, note, outcome, { reason });
}

/** One step of a prefix cancel's background sweep over the next timers of the prefix (in key order). */
export interface SweepStep {
  readonly decisions: CommandDecision[];
  readonly done: boolean;
  /** Where the next step starts (after this key); null once the sweep is done. */
  readonly progressKey: string | null;
  /** An entry for each timer it cancelled, with `historyEntries` (CONTRACT §19). */
  readonly history: HistoryWrite[];
}

/**
 * Cancels `batch` (at most `limit` timers of the prefix, after the last step's progress) as a
 * `CancelTimer` at the prefix cancel's timestamp would; a batch shorter than `limit` ends the sweep.
 * With `historyEntries`, each timer it cancels gains an entry (CONTRACT §19).
 */
export function decideSweepStep(batch: readonly Timer[], commandTs: number, limit: number, nowMs: number, historyEntries = 0): SweepStep {
  const history: HistoryWrite[] = [];
  const decisions = batch.map((timer) => {
    const cancel: CancelTimerCommand = {
      kind: "cancel",
      tenantId: timer.tenantId,
      serviceCallId: timer.serviceCallId,
      correlationId: null,
      timestampMs: commandTs,
    };
    const decision = decideCommand(timer, cancel, nowMs);
    if (historyEntries > 0 && decision.outcome === "accepted" && decision.next !== undefined) {
      history.push({ tenantId: timer.tenantId, serviceCallId: timer.serviceCallId, entry: prefixCancelEntry(nowMs, commandTs) });
    }
    return decision;
  });
  const done = batch.length < limit;
  return { decisions, done, progressKey: done ? null : batch[batch.length - 1]!.serviceCallId, history };
}

/**
 * The guarded mark: a prefix cancel recorded after the timer was read covers it, so the firing must
 * not end it (the timer is recorded Cancelled instead, by the next poll or the sweep).
 */
export function firingOverriddenByPrefixCancel(prefixCancelTs: number | null, next: TimerAfterFiring): boolean {
  return next.state !== "Cancelled" && prefixCancelTs !== null && prefixCancelTs >= next.commandTs;
}
