/**
 * The NATS subject layout of CONTRACT §1, in one place: commands, events and queries under one
 * prefix, the kind (or endpoint) as the third token and the tenant as the last.
 *
 *   {prefix}.commands.{kind}.{tenantId}     kind: schedule, cancel, cancelprefix, complete, fail, retry
 *   {prefix}.events.{kind}.{tenantId}       kind: due, missed, rejected
 *   {prefix}.query.{endpoint}.{tenantId}    endpoint: get, list, stats
 *   {prefix}.outcomes.{tenantId}            CommandOutcome (core NATS, on request)
 */

/** The command each subject kind carries. */
export const COMMAND_KINDS = {
  schedule: "ScheduleTimer",
  cancel: "CancelTimer",
  cancelprefix: "CancelTimersByPrefix",
  complete: "TimerCompleted",
  fail: "TimerFailed",
  retry: "RetryTimer",
} as const;

export type CommandKind = keyof typeof COMMAND_KINDS;
export type CommandName = (typeof COMMAND_KINDS)[CommandKind];
export type EventKind = "due" | "missed" | "rejected";
export type QueryEndpoint = "get" | "list" | "stats";

export function isCommandKind(token: string): token is CommandKind {
  return Object.hasOwn(COMMAND_KINDS, token);
}

export function commandSubject(prefix: string, kind: CommandKind, tenantId: string): string {
  return `${prefix}.commands.${kind}.${tenantId}`;
}

/** Every command subject: what the commands stream holds. */
export function allCommandSubjects(prefix: string): string {
  return `${prefix}.commands.>`;
}

export function eventSubject(prefix: string, kind: EventKind, tenantId: string): string {
  return `${prefix}.events.${kind}.${tenantId}`;
}

/** Every event subject: what the events stream holds. */
export function allEventSubjects(prefix: string): string {
  return `${prefix}.events.>`;
}

export function querySubject(prefix: string, endpoint: QueryEndpoint, tenantId: string): string {
  return `${prefix}.query.${endpoint}.${tenantId}`;
}

/** One query endpoint for every tenant: the tenant is the last token. */
export function queryEndpointSubject(prefix: string, endpoint: QueryEndpoint): string {
  return `${prefix}.query.${endpoint}.*`;
}

/** How the query endpoints read in docs and the micro service's metadata. */
export function queryEndpointsPattern(prefix: string): string {
  return `${prefix}.query.{get,list,stats}.{tenantId}`;
}

/** Where the outcomes of a tenant's commands go (CONTRACT §19); `*` for every tenant's. */
export function outcomeSubject(prefix: string, tenantId: string): string {
  return `${prefix}.outcomes.${tenantId}`;
}

/** A command subject taken apart; `kind` is whatever the third token says, checked by the caller. */
export interface CommandSubject {
  /** Four tokens, the first the prefix and the second `commands`. */
  readonly inLayout: boolean;
  readonly kind: string;
  /** The fourth token, when there are exactly four. */
  readonly tenantToken: string | undefined;
}

export function parseCommandSubject(prefix: string, subject: string): CommandSubject {
  const tokens = subject.split(".");
  return {
    inLayout: tokens.length === 4 && tokens[0] === prefix && tokens[1] === "commands",
    kind: tokens[2] ?? "",
    tenantToken: tokens.length === 4 ? tokens[3] : undefined,
  };
}
