import { formatInstant } from "../../domain/due-time.js";
import { isBeyondRetention } from "../../domain/retention.js";
import { isRetryable } from "../../domain/retry-timer-rules.js";
import { isClosedToCommands } from "../../domain/timer.js";
import { appliedWithoutChange } from "../../domain/key-decision.js";
import type { TimerCommand } from "../../domain/timer-command.js";
import type { AppliedDecision, DecidedTimer } from "../applied-decision.js";
import type { OutcomeKind, OutcomeTimer } from "./command-outcomes.js";

/** What the outcome of a stored command says (CONTRACT §19); a refusal is a rejection instead. */
export interface DecisionOutcome {
  readonly outcome: Exclude<OutcomeKind, "rejected">;
  readonly reason: string;
  readonly timer?: OutcomeTimer;
}

/** What besides the command and its decision tells why it was ignored. */
export interface OutcomeContext {
  readonly nowMs: number;
  /** TIMER_RETENTION_HOURS in ms; 0: none. */
  readonly retentionMs: number;
  /** How often the broker delivered the message: a redelivery is told apart. */
  readonly deliveryCount: number;
}

type StoredDecision = Exclude<AppliedDecision, { outcome: "refused" }>;

/** The timer member of an outcome; `occurrence` only for a recurring timer. */
export function outcomeTimer(timer: DecidedTimer): OutcomeTimer {
  const { state, dueAtMs, generation } = timer;
  return timer.repeat == null ? { state, dueAtMs, generation } : { state, dueAtMs, generation, occurrence: timer.occurrence };
}

/**
 * The outcome of a command the store decided on, and why, from what the decision shows: the timer
 * before (`previous`) and after (`next`), and the command's `timestampMs` against the timer's
 * `commandTs`. Only computed for a command whose sender asked for its outcome.
 *
 * A command that changed nothing but moved the timer's `commandTs` forward (a newer re-send of the
 * same schedule, a newer cancel of a cancelled timer) is `applied`: §3.2 says it applies, and the
 * timer is as the command asks.
 */
export function decisionOutcome(command: TimerCommand, decision: StoredDecision, context: OutcomeContext): DecisionOutcome {
  const { previous, next } = decision;
  const after = next ?? previous;
  const timer = after === undefined ? undefined : outcomeTimer(after);
  const withTimer = (outcome: DecisionOutcome["outcome"], reason: string): DecisionOutcome =>
    timer === undefined ? { outcome, reason } : { outcome, reason, timer };
  const ts = command.timestampMs;
  if (command.kind === "cancelPrefix") {
    if (decision.outcome === "accepted") return withTimer("applied", "prefix cancel recorded: its timers are cancelled in the background");
    if (beyondRetention(command, context)) return withTimer("ignored", retentionReason(context));
    return withTimer(
      "ignored",
      `older or equal timestampMs: the prefix was already cancelled at the same or a later timestampMs${redelivered(context)}`,
    );
  }
  if (decision.outcome === "accepted") return withTimer("applied", appliedReason(command, previous, next));
  if (beyondRetention(command, context) && previous === undefined) return withTimer("ignored", retentionReason(context));
  if (blockedByPrefixCancel(command, previous, next)) {
    return withTimer(
      "ignored",
      "blocked by a prefix cancel: a CancelTimersByPrefix with the same or a newer timestampMs covers this timer",
    );
  }
  if (next !== undefined && appliedWithoutChange(decision, ts)) {
    return withTimer("applied", `nothing to change: the timer already was ${next.state} as the command asks`);
  }
  if ("retryLater" in decision && decision.retryLater === true) {
    return withTimer("ignored", "the timer is due but not yet recorded Fired: its report came before the record of its publish");
  }
  if (previous === undefined) return withTimer("ignored", "unknown timer: no timer has this serviceCallId");
  if (context.deliveryCount > 1 && ts <= previous.commandTs) {
    return withTimer(
      "ignored",
      `redelivery (delivery ${context.deliveryCount}): the timer's last command has the same or a newer timestampMs, as after this command's earlier delivery`,
    );
  }
  return withTimer("ignored", ignoredReason(command, previous));
}

function beyondRetention(command: TimerCommand, context: OutcomeContext): boolean {
  return context.retentionMs > 0 && isBeyondRetention(command.timestampMs, context.nowMs, context.retentionMs);
}

function retentionReason(context: OutcomeContext): string {
  return `older than the retention window: timestampMs before ${formatInstant(context.nowMs - context.retentionMs)} (TIMER_RETENTION_HOURS)`;
}

/**
 * A prefix cancel decided it: a key without a timer that a prefix cancel covers (a schedule or a
 * cancel of an unknown key is otherwise applied), or a timer the prefix cancel moved to `Cancelled`
 * at its own timestamp rather than the command's.
 */
function blockedByPrefixCancel(command: TimerCommand, previous: DecidedTimer | undefined, next: DecidedTimer | undefined): boolean {
  if (previous === undefined) return command.kind === "schedule" || command.kind === "cancel";
  return next?.state === "Cancelled" && previous.state !== "Cancelled" && next.commandTs !== command.timestampMs;
}

function appliedReason(command: Exclude<TimerCommand, { kind: "cancelPrefix" }>, previous?: DecidedTimer, next?: DecidedTimer): string {
  switch (command.kind) {
    case "schedule":
      if (previous === undefined) return "timer created";
      if (previous.state === "Cancelled") return "timer re-armed";
      return "timer rescheduled";
    case "cancel":
      return previous === undefined ? "cancel recorded for an unknown timer: an older schedule cannot create it" : "timer cancelled";
    case "complete":
      return "completion recorded: the timer is Completed";
    case "fail":
      return next?.state === "Fired"
        ? "failure recorded: the event is published again after the backoff"
        : `failure recorded: the timer is ${next?.state}`;
    case "retry":
      return "timer re-armed: it fires now";
  }
}

function ignoredReason(command: Exclude<TimerCommand, { kind: "cancelPrefix" }>, previous: DecidedTimer): string {
  const { state, commandTs } = previous;
  const ts = command.timestampMs;
  const order =
    ts < commandTs
      ? `older timestampMs: the timer's last command has timestampMs ${commandTs}`
      : `equal timestampMs: the timer's last command has the same timestampMs ${commandTs}`;
  switch (command.kind) {
    case "schedule":
    case "cancel":
      if (isClosedToCommands(state)) return `timer closed to commands: it is ${state}`;
      if (command.kind === "schedule" && state === "Cancelled" && ts === commandTs)
        return `${order}; at an equal timestampMs the cancel wins`;
      return order;
    case "complete":
    case "fail":
      if (state !== "Fired") return `timer not Fired: it is ${state}; only a Fired timer with delivery takes reports`;
      if (ts <= commandTs) return order;
      return "no publish in hand: a retry is already waiting";
    case "retry":
      if (!isRetryable(state)) return `timer closed to retries: it is ${state}; only Failed, TimedOut and Missed timers are retried`;
      if (ts <= commandTs) return order;
      return "blocked by a prefix cancel: a CancelTimersByPrefix with the same or a newer timestampMs covers this timer";
  }
}

function redelivered(context: OutcomeContext): string {
  return context.deliveryCount > 1 ? ` (redelivery: delivery ${context.deliveryCount})` : "";
}
