import type { CommandDecision } from "../domain/command-rules.js";
import type { Timer } from "../domain/timer.js";

/**
 * What the service reads of a timer a command decided on: its state and the instants its metrics and
 * wake-ups need, and what a `CommandOutcome` tells of it and why a command was ignored (CONTRACT §19).
 */
export type DecidedTimer = Pick<
  Timer,
  "state" | "dueAtMs" | "firedAtMs" | "completedAtMs" | "deadlineAtMs" | "commandTs" | "generation" | "occurrence" | "repeat"
>;

/** `D` with its timers as `DecidedTimer`s; a decision that never has `next` (refused) still has none. */
type WithDecidedTimers<D> = D extends { readonly next?: infer Next }
  ? Omit<D, "previous" | "next"> & {
      readonly previous: DecidedTimer | undefined;
      readonly next?: Next extends Timer ? DecidedTimer : undefined;
    }
  : never;

/**
 * A command's decision as `applyCommands` reports it: a `CommandDecision` whose timers may be
 * reduced to `DecidedTimer` (`appliedDecision`), so that a store deciding on another thread sends
 * back only what is read of them.
 */
export type AppliedDecision = WithDecidedTimers<CommandDecision>;

function decidedTimer({
  state,
  dueAtMs,
  firedAtMs,
  completedAtMs,
  deadlineAtMs,
  commandTs,
  generation,
  occurrence,
  repeat,
}: Timer): DecidedTimer {
  return { state, dueAtMs, firedAtMs, completedAtMs, deadlineAtMs, commandTs, generation, occurrence, repeat };
}

/** `decision` with its timers reduced to what the service reads of them: less to copy across threads. */
export function appliedDecision(decision: CommandDecision): AppliedDecision {
  const previous = decision.previous === undefined ? undefined : decidedTimer(decision.previous);
  if (decision.outcome === "refused") return { ...decision, previous };
  const { next } = decision;
  return { ...decision, previous, next: next === undefined ? undefined : decidedTimer(next) };
}
