import { timerKeyString, type Timer, type TimerKey } from "../../domain/timer.js";
import type { CancelTimerCommand, KeyCommand, TimerCommand } from "../../domain/timer-command.js";
import type { CommandDecision, DecideContext } from "../../domain/timer-rules.js";
import type { PrefixCancel, PrefixCancelIndex } from "../../domain/prefix-cancel.js";
import type { TimerAfterFiring } from "../../domain/firing-rules.js";
import type { DecideCommand } from "../../app/timer-store.js";

/**
 * What every store does the same way around the domain's decisions; each store keeps only how it
 * reads and writes (prepared statements, one `unnest` statement, a map).
 */

/** How one store reads and stages the effects of a command batch. */
export interface CommandBatchSteps {
  /** The prefix cancels in force for the batch's tenants; the batch adds the ones it records. */
  readonly prefixIndex: PrefixCancelIndex;
  /** Decides one command on its key's current timer and stages (or writes) the result. */
  decideOnKey(command: KeyCommand, context: DecideContext): CommandDecision;
  /** Stages (or writes) an accepted prefix cancel. */
  recordPrefixCancel(cancel: PrefixCancel): void;
}

/**
 * Decides a batch of commands in order, inside the store's transaction: a prefix cancel against the
 * one recorded for its prefix, every other command against its key's timer with the newest prefix
 * cancel covering the key — including ones recorded earlier in the same batch.
 */
export function decideCommandBatch(commands: readonly TimerCommand[], decide: DecideCommand, steps: CommandBatchSteps): CommandDecision[] {
  return commands.map((command) => {
    if (command.kind !== "cancelPrefix") {
      return steps.decideOnKey(command, { prefixCancelTs: steps.prefixIndex.latestFor(command.tenantId, command.serviceCallId) });
    }
    const { tenantId, serviceCallIdPrefix, timestampMs } = command;
    const decision = decide(undefined, command, { prefixCancelTs: steps.prefixIndex.get(tenantId, serviceCallIdPrefix) ?? null });
    if (decision.outcome === "accepted") {
      const cancel = { tenantId, serviceCallIdPrefix, commandTs: timestampMs };
      steps.recordPrefixCancel(cancel);
      steps.prefixIndex.add(cancel);
    }
    return decision;
  });
}

/** The distinct keys a batch's commands are about (a prefix cancel is about none), by `timerKeyString`. */
export function commandKeys(commands: readonly TimerCommand[]): Map<string, TimerKey> {
  const keys = new Map<string, TimerKey>();
  for (const command of commands) {
    if (command.kind === "cancelPrefix") continue;
    const { tenantId, serviceCallId } = command;
    keys.set(timerKeyString(command), { tenantId, serviceCallId });
  }
  return keys;
}

/**
 * `decideOnKey` for a store that read the batch's timers first: each command is decided on its key's
 * timer as the batch has left it so far (`current`, keyed by `timerKeyString`, starts with the
 * stored ones), and `changed` collects each key's final timer for one write at the end.
 */
export function decideOnCurrent(
  current: Map<string, Timer | undefined>,
  decide: DecideCommand,
): { readonly decideOnKey: CommandBatchSteps["decideOnKey"]; readonly changed: Map<string, Timer> } {
  const changed = new Map<string, Timer>();
  const decideOnKey = (command: KeyCommand, context: DecideContext): CommandDecision => {
    const key = timerKeyString(command);
    const decision = decide(current.get(key), command, context);
    if (decision.next !== undefined) {
      current.set(key, decision.next);
      changed.set(key, decision.next);
    }
    return decision;
  };
  return { decideOnKey, changed };
}

/** One step of a prefix cancel's background sweep over the next timers of the prefix (in key order). */
export interface SweepStep {
  readonly decisions: CommandDecision[];
  readonly done: boolean;
  /** Where the next step starts (after this key); null once the sweep is done. */
  readonly progressKey: string | null;
}

/**
 * Cancels `batch` (at most `limit` timers of the prefix, after the last step's progress) as a
 * `CancelTimer` at the prefix cancel's timestamp would; a batch shorter than `limit` ends the sweep.
 */
export function decideSweepStep(batch: readonly Timer[], commandTs: number, limit: number, decide: DecideCommand): SweepStep {
  const decisions = batch.map((timer) => {
    const cancel: CancelTimerCommand = {
      kind: "cancel",
      tenantId: timer.tenantId,
      serviceCallId: timer.serviceCallId,
      correlationId: null,
      timestampMs: commandTs,
    };
    return decide(timer, cancel, { prefixCancelTs: null });
  });
  const done = batch.length < limit;
  return { decisions, done, progressKey: done ? null : batch[batch.length - 1]!.serviceCallId };
}

/**
 * The guarded mark: a prefix cancel recorded after the timer was read covers it, so the firing must
 * not end it (the timer is recorded Cancelled instead, by the next poll or the sweep).
 */
export function firingOverriddenByPrefixCancel(prefixCancelTs: number | null, next: TimerAfterFiring): boolean {
  return next.state !== "Cancelled" && prefixCancelTs !== null && prefixCancelTs >= next.commandTs;
}
