import { z } from "zod";
import {
  cancelTimerPayloadSchema,
  cancelTimersByPrefixPayloadSchema,
  commandEnvelopeSchema,
  scheduleTimerPayloadSchema,
  timerCompletedPayloadSchema,
  timerFailedPayloadSchema,
} from "./commands/command-envelope.schema.js";
import { retryTimerPayloadSchema } from "./commands/retry-timer.schema.js";
import { commandOutcomeSchema } from "./commands/command-outcome.schema.js";
import { commandRejectedSchema, dueTimeMissedSchema, dueTimeReachedSchema } from "./events/event-envelope.schema.js";
import { getReplySchema, listReplySchema, queryErrorSchema, statsReplySchema } from "./queries/query-replies.schema.js";
import { getRequestSchema, listRequestSchema, statsRequestSchema } from "./queries/query-requests.js";
import type { CommandKind, CommandName, EventKind, QueryEndpoint } from "./subjects.js";

/**
 * Every message of the external contract with the zod schema that checks it: the one source of
 * the published JSON Schemas (`npm run schemas:generate`) and of the AsyncAPI document. `token` is
 * the subject's kind or endpoint (src/app/subjects.ts).
 */

export interface CommandMessage {
  readonly role: "command";
  readonly name: CommandName;
  readonly token: CommandKind;
  readonly summary: string;
  readonly schema: z.ZodType;
}

export interface EventMessage {
  readonly role: "event";
  readonly name: string;
  readonly token: EventKind;
  readonly summary: string;
  readonly schema: z.ZodType;
}

export interface QueryEndpointMessages {
  readonly role: "query";
  readonly endpoint: QueryEndpoint;
  readonly summary: string;
  readonly request: { readonly name: string; readonly schema: z.ZodType };
  readonly reply: { readonly name: string; readonly schema: z.ZodType };
}

/** A command envelope whose `type` is `name` and whose payload is `payload`. */
function commandEnvelope<const T extends string>(type: T, payload: z.ZodType) {
  return commandEnvelopeSchema.extend({ type: z.literal(type), payload });
}

export const COMMAND_MESSAGES: readonly CommandMessage[] = [
  {
    role: "command",
    name: "ScheduleTimer",
    token: "schedule",
    summary: "Creates, reschedules or re-arms the timer (tenantId, serviceCallId).",
    schema: commandEnvelope("ScheduleTimer", scheduleTimerPayloadSchema),
  },
  {
    role: "command",
    name: "CancelTimer",
    token: "cancel",
    summary: "Cancels a Scheduled timer; on an unknown key records the cancel.",
    schema: commandEnvelope("CancelTimer", cancelTimerPayloadSchema),
  },
  {
    role: "command",
    name: "CancelTimersByPrefix",
    token: "cancelprefix",
    summary: "Cancels every timer of the tenant whose serviceCallId starts with the prefix.",
    schema: commandEnvelope("CancelTimersByPrefix", cancelTimersByPrefixPayloadSchema),
  },
  {
    role: "command",
    name: "TimerCompleted",
    token: "complete",
    summary: "Reports the work of a Fired timer (with delivery) as done.",
    schema: commandEnvelope("TimerCompleted", timerCompletedPayloadSchema),
  },
  {
    role: "command",
    name: "TimerFailed",
    token: "fail",
    summary: "Reports the work of a Fired timer (with delivery) as failed; it is retried while attempts remain.",
    schema: commandEnvelope("TimerFailed", timerFailedPayloadSchema),
  },
  {
    role: "command",
    name: "RetryTimer",
    token: "retry",
    summary: "Re-arms a Failed, TimedOut or Missed timer to fire at once.",
    schema: commandEnvelope("RetryTimer", retryTimerPayloadSchema),
  },
];

export const EVENT_MESSAGES: readonly EventMessage[] = [
  {
    role: "event",
    name: "DueTimeReached",
    token: "due",
    summary: "A timer (or one occurrence, or one attempt) fell due.",
    schema: dueTimeReachedSchema,
  },
  {
    role: "event",
    name: "DueTimeMissed",
    token: "missed",
    summary: "An occurrence would have been published more than maxLatenessMs after its dueAt.",
    schema: dueTimeMissedSchema,
  },
  {
    role: "event",
    name: "CommandRejected",
    token: "rejected",
    summary:
      "A command was refused: it failed validation, would exceed the pending quota, or is a newer ScheduleTimer of a timer closed to commands (TIMER_FINAL). The tenant token is _unknown when the subject named no valid tenant.",
    schema: commandRejectedSchema,
  },
];

export const QUERY_MESSAGES: readonly QueryEndpointMessages[] = [
  {
    role: "query",
    endpoint: "get",
    summary: "One timer by serviceCallId; timer is null when unknown. With history: true, also its history, oldest first.",
    request: { name: "GetTimerRequest", schema: getRequestSchema },
    reply: { name: "GetTimerReply", schema: getReplySchema },
  },
  {
    role: "query",
    endpoint: "list",
    summary:
      "A page of timers ordered by (dueAt, serviceCallId), or most recently changed first (order changedDesc); nextCursor is null on the last page.",
    request: { name: "ListTimersRequest", schema: listRequestSchema },
    reply: { name: "ListTimersReply", schema: listReplySchema },
  },
  {
    role: "query",
    endpoint: "stats",
    summary: "Counts of the tenant's timers by state.",
    request: { name: "TimerStatsRequest", schema: statsRequestSchema },
    reply: { name: "TimerStatsReply", schema: statsReplySchema },
  },
];

/** The outcome of a command sent with `Timer-Confirm: 1` (CONTRACT §19): core NATS on `{prefix}.outcomes.{tenantId}`. */
export const OUTCOME_MESSAGE = {
  name: "CommandOutcome",
  summary: "What became of one command sent with Timer-Confirm: 1: applied, ignored (and why) or rejected (and its code).",
  schema: commandOutcomeSchema,
} as const;

/** The body of every query error reply. */
export const QUERY_ERROR_MESSAGE = { name: "QueryError", schema: queryErrorSchema } as const;
