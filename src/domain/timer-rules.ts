import type { Timer } from "./timer.js";
import type { CancelTimerCommand, ScheduleTimerCommand, TimerCommand } from "./timer-command.js";

/**
 * What applying one command does to one timer.
 * - `accepted`: the command created or changed the timer; `next` is what to store.
 * - `ignored`: nothing observable changed. `next` is set when only `commandTs` moved forward and must
 *   still be stored (CONTRACT §3.2: "commandTs becomes its timestampMs even when it changes nothing").
 */
export type CommandDecision =
  | { readonly outcome: "accepted"; readonly previous: Timer | undefined; readonly next: Timer }
  | { readonly outcome: "ignored"; readonly previous: Timer | undefined; readonly next?: Timer };

/** Decides the effect of `command` on the `current` timer of its key (CONTRACT §3). Pure. */
export function decideCommand(current: Timer | undefined, command: TimerCommand, nowMs: number): CommandDecision {
  return command.kind === "schedule" ? decideSchedule(current, command, nowMs) : decideCancel(current, command, nowMs);
}

function isStale(current: Timer, command: TimerCommand): boolean {
  return command.timestampMs < current.commandTs;
}

function newTimer(
  command: TimerCommand,
  state: Timer["state"],
  dueAtMs: number | null,
  data: string | null,
  correlationId: string | null,
  nowMs: number,
): Timer {
  const { tenantId, serviceCallId, timestampMs } = command;
  return {
    tenantId,
    serviceCallId,
    state,
    dueAtMs,
    data,
    correlationId,
    commandTs: timestampMs,
    generation: 1,
    registeredAtMs: nowMs,
    reachedAtMs: null,
    updatedAtMs: nowMs,
  };
}

function decideSchedule(current: Timer | undefined, command: ScheduleTimerCommand, nowMs: number): CommandDecision {
  if (current === undefined) {
    return { outcome: "accepted", previous: current, next: newTimer(command, "Scheduled", command.dueAtMs, command.data, command.correlationId, nowMs) };
  }
  if (current.state === "Reached" || isStale(current, command)) return { outcome: "ignored", previous: current };
  // At an equal timestamp the cancel wins, so a redelivered schedule cannot undo it.
  if (current.state === "Cancelled" && command.timestampMs === current.commandTs) {
    return { outcome: "ignored", previous: current };
  }
  const unchanged =
    current.state === "Scheduled" &&
    current.dueAtMs === command.dueAtMs &&
    current.data === command.data &&
    current.correlationId === command.correlationId;
  if (unchanged) return bumpCommandTs(current, command.timestampMs, nowMs);
  return {
    outcome: "accepted",
    previous: current,
    next: {
      ...current,
      state: "Scheduled",
      dueAtMs: command.dueAtMs,
      data: command.data,
      correlationId: command.correlationId,
      commandTs: command.timestampMs,
      // Re-arming or changing what fires makes a new version: its event gets a new id (§2).
      generation: current.generation + 1,
      reachedAtMs: null,
      updatedAtMs: nowMs,
    },
  };
}

function decideCancel(current: Timer | undefined, command: CancelTimerCommand, nowMs: number): CommandDecision {
  if (current === undefined) {
    // A tombstone, so that an older ScheduleTimer arriving late cannot resurrect the key.
    return { outcome: "accepted", previous: current, next: newTimer(command, "Cancelled", null, null, null, nowMs) };
  }
  if (current.state === "Reached" || isStale(current, command)) return { outcome: "ignored", previous: current };
  if (current.state === "Cancelled") return bumpCommandTs(current, command.timestampMs, nowMs);
  return {
    outcome: "accepted",
    previous: current,
    next: { ...current, state: "Cancelled", commandTs: command.timestampMs, updatedAtMs: nowMs },
  };
}

function bumpCommandTs(current: Timer, timestampMs: number, nowMs: number): CommandDecision {
  if (timestampMs === current.commandTs) return { outcome: "ignored", previous: current };
  return { outcome: "ignored", previous: current, next: { ...current, commandTs: timestampMs, updatedAtMs: nowMs } };
}

/** How a decision changes the number of `Scheduled` timers (for the pending gauge). */
export function scheduledDelta(decision: CommandDecision): number {
  if (decision.next === undefined) return 0;
  const before = decision.previous?.state === "Scheduled" ? 1 : 0;
  const after = decision.next.state === "Scheduled" ? 1 : 0;
  return after - before;
}
