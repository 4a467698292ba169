import { isClosedToCommands, type Timer, type TimerState } from "./timer.js";
import { sameRecurrence } from "./recurrence.js";
import { decideReport, type DeliveryPolicy } from "./delivery-rules.js";
import { decideRetry } from "./retry-timer-rules.js";
import { traceMembers } from "./trace-context.js";
import type { KeyDecision } from "./key-decision.js";
import { isReuseOfFinalTimer, timerFinalReason } from "./final-timer.js";
import type { CancelTimerCommand, CancelTimersByPrefixCommand, KeyCommand, ScheduleTimerCommand, TimerCommand } from "./timer-command.js";

/**
 * What applying one command does to one timer.
 * - `accepted`: the command created or changed the timer; `next` is what to store. For a
 *   `CancelTimersByPrefix` there is no `next`: `accepted` means "record the prefix cancel".
 * - `ignored`: nothing observable changed. `next` is set when only `commandTs` moved forward and must
 *   still be stored (CONTRACT §3.2: "commandTs becomes its timestampMs even when it changes nothing"),
 *   or when a recorded prefix cancel not yet applied to this timer cancelled it. `retryLater`: a
 *   report for a tracked timer that is due but not yet recorded `Fired` (key-decision.ts).
 * - `refused`: valid, but nothing changes. `QUOTA_EXCEEDED` for a limit of the tenant (CONTRACT
 *   §12), `TIMER_FINAL` for a newer schedule of a timer closed to commands (§17), with its `reason`.
 */
export type CommandDecision =
  | KeyDecision
  | {
      readonly outcome: "refused";
      readonly previous: Timer | undefined;
      readonly next?: undefined;
      readonly code: "QUOTA_EXCEEDED" | "TIMER_FINAL";
      readonly reason: string;
    };

/**
 * What the store knows besides the timer. For a command about one key: the newest timestamp of
 * the recorded prefix cancels that match the key. For a `CancelTimersByPrefix`: the timestamp
 * already recorded for exactly its prefix. Null when there is none.
 */
export interface DecideContext {
  readonly prefixCancelTs: number | null;
}

const NO_CONTEXT: DecideContext = { prefixCancelTs: null };

/** Decides the effect of `command` on the `current` timer of its key (CONTRACT §3, §10). Pure. */
export function decideCommand(
  current: Timer | undefined,
  command: TimerCommand,
  nowMs: number,
  context: DecideContext = NO_CONTEXT,
): CommandDecision {
  if (command.kind === "cancelPrefix") return decidePrefixCancel(command, context.prefixCancelTs);
  const { prefixCancelTs } = context;
  if (prefixCancelTs !== null && current === undefined && command.timestampMs <= prefixCancelTs) {
    // A key without a timer that a prefix cancel covers is as if cancelled then: not newer is ignored.
    return { outcome: "ignored", previous: current };
  }
  const base = applyPrefixCancel(current, prefixCancelTs, nowMs);
  const decision = command.kind === "retry" ? decideRetry(base, command, nowMs, prefixCancelTs) : decideKeyCommand(base, command, nowMs);
  if (base === current || decision.outcome === "refused") return decision;
  // The prefix cancel changed the timer first: that is stored whatever the command does.
  return { outcome: decision.outcome, previous: current, next: decision.next ?? base! };
}

/**
 * A recorded prefix cancel the background sweep has not applied to this timer yet applies first,
 * as a `CancelTimer` with its timestamp would have.
 */
function applyPrefixCancel(current: Timer | undefined, prefixCancelTs: number | null, nowMs: number): Timer | undefined {
  if (current === undefined || prefixCancelTs === null || isClosedToCommands(current.state) || current.commandTs > prefixCancelTs)
    return current;
  const cancel: CancelTimerCommand = {
    kind: "cancel",
    tenantId: current.tenantId,
    serviceCallId: current.serviceCallId,
    correlationId: null,
    timestampMs: prefixCancelTs,
  };
  return decideCancel(current, cancel, nowMs).next ?? current;
}

function decideKeyCommand(current: Timer | undefined, command: Exclude<KeyCommand, { kind: "retry" }>, nowMs: number): CommandDecision {
  if (command.kind === "complete" || command.kind === "fail") return decideReport(current, command, nowMs);
  return command.kind === "schedule" ? decideSchedule(current, command, nowMs) : decideCancel(current, command, nowMs);
}

/** A prefix cancel is recorded unless the same prefix was cancelled at the same or a later time. */
function decidePrefixCancel(command: CancelTimersByPrefixCommand, recordedTs: number | null): CommandDecision {
  return { outcome: recordedTs === null || command.timestampMs > recordedTs ? "accepted" : "ignored", previous: undefined };
}

function isStale(current: Timer, command: KeyCommand): boolean {
  return command.timestampMs < current.commandTs;
}

function newTimer(command: ScheduleTimerCommand | CancelTimerCommand, state: Timer["state"], nowMs: number): Timer {
  const { tenantId, serviceCallId, timestampMs } = command;
  const schedule = command.kind === "schedule" ? command : undefined;
  return {
    tenantId,
    serviceCallId,
    state,
    dueAtMs: schedule?.dueAtMs ?? null,
    data: schedule?.data ?? null,
    correlationId: schedule?.correlationId ?? null,
    commandTs: timestampMs,
    generation: 1,
    registeredAtMs: nowMs,
    reachedAtMs: null,
    updatedAtMs: nowMs,
    repeat: schedule?.repeat ?? null,
    occurrence: 1,
    maxLatenessMs: schedule?.maxLatenessMs ?? null,
    ...trackingMembers(undefined, schedule?.delivery ?? null, schedule?.createdBy ?? null, schedule?.createdVia ?? null),
    ...(schedule?.trace === undefined ? {} : traceMembers(schedule.trace)),
  };
}

/**
 * The §11 members a schedule stores: only those that are set or were set before, so that a timer
 * without them keeps the shape it had without completion tracking.
 */
function trackingMembers(
  current: Timer | undefined,
  delivery: DeliveryPolicy | null,
  createdBy: string | null,
  createdVia: string | null,
): Partial<Timer> {
  const members: { delivery?: DeliveryPolicy | null; createdBy?: string | null; createdVia?: string | null } = {};
  if (delivery !== null || current?.delivery != null) members.delivery = delivery;
  if (createdBy !== null) members.createdBy = createdBy;
  if (createdVia !== null) members.createdVia = createdVia;
  return members;
}

function sameDelivery(a: DeliveryPolicy | null | undefined, b: DeliveryPolicy | null | undefined): boolean {
  if (!a || !b) return !a && !b;
  return a.maxRetries === b.maxRetries && a.backoffMs === b.backoffMs && a.completionTimeoutMs === b.completionTimeoutMs;
}

/** The command would fire the same thing as the timer: same due time (or series), data, correlationId, repeat. */
function firesTheSame(current: Timer, command: ScheduleTimerCommand): boolean {
  const repeat = command.repeat ?? null;
  return (
    current.state === "Scheduled" &&
    // A recurring timer has moved on from its first due time, which its rule remembers.
    (repeat !== null || current.dueAtMs === command.dueAtMs) &&
    sameRecurrence(current.repeat, repeat) &&
    current.data === command.data &&
    current.correlationId === command.correlationId
  );
}

function decideSchedule(current: Timer | undefined, command: ScheduleTimerCommand, nowMs: number): CommandDecision {
  if (current === undefined) return { outcome: "accepted", previous: current, next: newTimer(command, "Scheduled", nowMs) };
  if (isClosedToCommands(current.state)) {
    if (!isReuseOfFinalTimer(current, command)) return { outcome: "ignored", previous: current };
    return { outcome: "refused", previous: current, code: "TIMER_FINAL", reason: timerFinalReason(current) };
  }
  if (isStale(current, command)) return { outcome: "ignored", previous: current };
  // At an equal timestamp the cancel wins, so a redelivered schedule cannot undo it.
  if (current.state === "Cancelled" && command.timestampMs === current.commandTs) {
    return { outcome: "ignored", previous: current };
  }
  const maxLatenessMs = command.maxLatenessMs ?? null;
  const delivery = command.delivery ?? null;
  // The audit members name who created the timer: a later command fills them only when unset.
  const createdBy = current.createdBy ?? command.createdBy ?? null;
  const createdVia = current.createdVia ?? command.createdVia ?? null;
  if (firesTheSame(current, command)) {
    if (current.maxLatenessMs === maxLatenessMs && sameDelivery(current.delivery, delivery))
      return bumpCommandTs(current, command.timestampMs, nowMs);
    // Only the lateness or delivery policy changed: stored, but the same version fires (no new generation).
    return {
      outcome: "accepted",
      previous: current,
      next: {
        ...current,
        maxLatenessMs,
        ...trackingMembers(current, delivery, createdBy, createdVia),
        ...(command.trace === undefined ? {} : traceMembers(command.trace)),
        commandTs: command.timestampMs,
        updatedAtMs: nowMs,
      },
    };
  }
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
      repeat: command.repeat ?? null,
      occurrence: 1,
      maxLatenessMs,
      ...trackingMembers(current, delivery, createdBy, createdVia),
      ...(command.trace === undefined ? {} : traceMembers(command.trace)),
    },
  };
}

function decideCancel(current: Timer | undefined, command: CancelTimerCommand, nowMs: number): CommandDecision {
  if (current === undefined) {
    // A tombstone, so that an older ScheduleTimer arriving late cannot resurrect the key.
    return { outcome: "accepted", previous: current, next: newTimer(command, "Cancelled", nowMs) };
  }
  if (isClosedToCommands(current.state) || isStale(current, command)) return { outcome: "ignored", previous: current };
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

/**
 * The pending quota (CONTRACT §12): a decision that would raise the tenant's count of Scheduled
 * timers (`pending`, before it) above `maxPending` is refused. A reschedule of a Scheduled timer,
 * a cancel and everything that lowers the count pass. `maxPending` 0: no quota.
 */
export function withinPendingQuota(decision: CommandDecision, tenantId: string, pending: number, maxPending: number): CommandDecision {
  if (maxPending === 0 || scheduledDelta(decision) <= 0 || pending + 1 <= maxPending) return decision;
  const reason = `tenant ${tenantId} has ${maxPending} Scheduled timers, its quota (TIMER_TENANT_MAX_PENDING)`;
  return { outcome: "refused", previous: decision.previous, code: "QUOTA_EXCEEDED", reason };
}

/** How a decision changes the number of `Scheduled` timers (for the pending gauge). */

export function scheduledDelta(decision: {
  readonly previous?: { readonly state: TimerState } | undefined;
  readonly next?: { readonly state: TimerState } | undefined;
}): number {
  if (decision.next === undefined) return 0;
  const before = decision.previous?.state === "Scheduled" ? 1 : 0;
  const after = decision.next.state === "Scheduled" ? 1 : 0;
  return after - before;
}
