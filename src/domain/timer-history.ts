import type { KeyCommand } from "./timer-command.js";

/**
 * A timer's own history (CONTRACT §19): its last entries, oldest first. Each entry is built as JSON
 * text and stored as one row of its own beside the timer's (the SQL stores' `timer_history`), so
 * appending one never reads or rewrites the entries before it.
 */

/** What became of a command that reached the timer. */
export type HistoryOutcome = "applied" | "ignored" | "rejected";

/** A command, completion report, retry or operator action that reached the timer. */
export interface CommandHistoryEntry {
  readonly at: string;
  readonly kind: "command";
  /** The command's type: `ScheduleTimer`, `CancelTimer`, `RetryTimer`, `TimerCompleted`, … */
  readonly type: string;
  readonly commandId?: string;
  readonly timestampMs: number;
  readonly traceId?: string;
  readonly outcome: HistoryOutcome;
  /** Why it was ignored, or the rejection's reason. */
  readonly reason?: string;
  /** The rejection's code (CONTRACT §2). */
  readonly code?: string;
  /** An operator action (CONTRACT §14): sent through the HTTP API with its bearer token, or over NATS without one. */
  readonly operator?: { readonly via: "http" | "nats"; readonly token: boolean };
}

/** A firing: the event published (`fired`, `missed`), or why none was. */
export interface FiringHistoryEntry {
  readonly at: string;
  readonly kind: "fired" | "missed";
  /** The event's id (CONTRACT §2). */
  readonly eventId: string;
  readonly attempt: number;
  readonly lateMs: number;
  /** For a recurring timer. */
  readonly occurrence?: number;
  readonly published: boolean;
  /** Why it was not published, or why it was a `DueTimeMissed`. */
  readonly reason?: string;
}

/** A completion time-out (CONTRACT §11). */
export interface TimeoutHistoryEntry {
  readonly at: string;
  readonly kind: "timeout";
  readonly attempt: number;
  /** What follows: a retry after the backoff, or `TimedOut`. */
  readonly then: string;
}

export type HistoryEntry = CommandHistoryEntry | FiringHistoryEntry | TimeoutHistoryEntry;

/** What the store does not know of a command but its history records. */
export interface CommandNote {
  readonly commandId?: string | undefined;
  readonly traceId?: string | undefined;
}

/** An entry to append to a timer's stored history where a firing or a deadline is recorded. */
export interface HistoryAppend {
  /** One entry's JSON text (an entry builder's output). */
  readonly entry: string;
  /** TIMER_HISTORY_ENTRIES: how many entries the timer keeps. */
  readonly keep: number;
}

/** Ids of the commands the HTTP API sends for an operator (CONTRACT §14). */
export const OPERATOR_COMMAND_ID_PREFIX = "admin-";

/**
 * How every entry's text starts, and where only an entry starts: inside a JSON string a quote is
 * escaped, and no member of an entry is an object whose first member is `at`.
 */
const ENTRY_START = '{"at":';

const COMMAND_TYPES: Readonly<Record<KeyCommand["kind"], string>> = {
  schedule: "ScheduleTimer",
  cancel: "CancelTimer",
  retry: "RetryTimer",
  complete: "TimerCompleted",
  fail: "TimerFailed",
};

/** The last instant formatted: the entries of one batch share their instant, and formatting one costs more than the rest of an entry. */
let lastAtMs = Number.NaN;
let lastAt = "";

function at(nowMs: number): string {
  if (nowMs !== lastAtMs) {
    lastAt = `{"at":"${new Date(nowMs).toISOString()}"`;
    lastAtMs = nowMs;
  }
  return lastAt;
}

/** The entry of a command that reached a timer, as JSON text. */
export function commandEntry(
  nowMs: number,
  command: KeyCommand,
  note: CommandNote | undefined,
  outcome: HistoryOutcome,
  detail?: { readonly reason?: string | undefined; readonly code?: string | undefined },
): string {
  let text = `${at(nowMs)},"kind":"command","type":"${COMMAND_TYPES[command.kind]}"`;
  if (note?.commandId !== undefined) text += `,"commandId":${JSON.stringify(note.commandId)}`;
  text += `,"timestampMs":${command.timestampMs}`;
  if (note?.traceId !== undefined) text += `,"traceId":"${note.traceId}"`;
  text += `,"outcome":"${outcome}"`;
  if (detail?.code !== undefined) text += `,"code":"${detail.code}"`;
  if (detail?.reason !== undefined) text += `,"reason":${JSON.stringify(detail.reason)}`;
  const http = note?.commandId?.startsWith(OPERATOR_COMMAND_ID_PREFIX) === true;
  if (http) text += `,"operator":{"via":"http","token":true}`;
  else if (command.kind === "retry") text += `,"operator":{"via":"nats","token":false}`;
  return text + "}";
}

/** The entry of a timer a prefix cancel's background sweep cancelled, as JSON text. */
export function prefixCancelEntry(nowMs: number, timestampMs: number): string {
  return `${at(nowMs)},"kind":"command","type":"CancelTimersByPrefix","timestampMs":${timestampMs},"outcome":"applied"}`;
}

/** The entry of a firing, as JSON text. */
export function firingEntry(
  nowMs: number,
  firing: {
    readonly kind: "fired" | "missed";
    readonly eventId: string;
    readonly attempt: number;
    readonly lateMs: number;
    readonly occurrence: number | null;
    readonly published: boolean;
    readonly reason?: string;
  },
): string {
  let text = `${at(nowMs)},"kind":"${firing.kind}","eventId":${JSON.stringify(firing.eventId)},"attempt":${firing.attempt},"lateMs":${firing.lateMs}`;
  if (firing.occurrence !== null) text += `,"occurrence":${firing.occurrence}`;
  text += `,"published":${firing.published}`;
  if (firing.reason !== undefined) text += `,"reason":${JSON.stringify(firing.reason)}`;
  return text + "}";
}

/** The entry of a completion time-out, as JSON text. */
export function timeoutEntry(nowMs: number, attempt: number, then: string): string {
  return `${at(nowMs)},"kind":"timeout","attempt":${attempt},"then":${JSON.stringify(then)}}`;
}

/**
 * `stored` (a JSON array of entries, or null) with `entry` appended, keeping the last `keep`
 * entries (the oldest dropped first). Pure; the SQL stores apply the same rule where they append.
 */
export function appendHistory(stored: string | null | undefined, entry: string, keep: number): string {
  if (stored == null || stored.length <= 2 || keep <= 1) return `[${entry}]`;
  // Searched forward for a pattern this short: no search table is built per call.
  let entries = 0;
  for (let i = stored.indexOf(ENTRY_START); i !== -1; i = stored.indexOf(ENTRY_START, i + ENTRY_START.length)) entries++;
  const drop = entries + 1 - keep;
  if (drop <= 0) return `${stored.slice(0, -1)},${entry}]`;
  // Kept from the start of the entry after the dropped ones.
  let start = -1;
  for (let found = 0; found <= drop; found++) start = stored.indexOf(ENTRY_START, start + 1);
  return `[${stored.slice(start, -1)},${entry}]`;
}

/** A history's text (a JSON array) as the JSON text of each entry, oldest first; none when there is none. */
export function historyEntryTexts(stored: string | null | undefined): string[] {
  if (stored == null || stored.length <= 2) return [];
  // Cut where each entry starts, as appendHistory does: the text is not parsed and written again.
  const entries: string[] = [];
  let start = stored.indexOf(ENTRY_START);
  while (start !== -1) {
    const next = stored.indexOf(ENTRY_START, start + ENTRY_START.length);
    entries.push(stored.slice(start, next === -1 ? -1 : next - 1));
    start = next;
  }
  return entries;
}

/** The stored history as entries, oldest first; none when there is none. */
export function parseHistory(stored: string | null | undefined): HistoryEntry[] {
  if (stored == null || stored === "") return [];
  return JSON.parse(stored) as HistoryEntry[];
}
