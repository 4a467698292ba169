/**
 * Instants on the wire are ISO 8601 date-times with an explicit offset (CONTRACT §2). Inside the
 * service they are integer milliseconds since the epoch, UTC.
 */

// date T time, optional seconds and fraction (any length, '.' or ','), then Z or an offset.
export const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$/;

/** 0000-01-01T00:00:00.000Z: the earliest instant with a four-digit year. */
const EARLIEST_INSTANT_MS = -62_167_219_200_000;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  return month === 2 && isLeapYear(year) ? 29 : (DAYS_IN_MONTH[month - 1] ?? 0);
}

/**
 * Why a text is not an instant: not the ISO 8601 shape at all, the shape with a field out of range
 * (month 13, 30 February, hour 24, minute 60, second 60), an offset beyond ±23:59, or an instant
 * before year 0000 once the offset is applied.
 */
export type InstantProblem = "format" | "no such date" | "no such offset" | "before year 0000";

export type InstantReading = { readonly ok: true; readonly epochMs: number } | { readonly ok: false; readonly problem: InstantProblem };

/**
 * Reads an ISO 8601 date-time that carries an offset into epoch milliseconds; fractional seconds
 * beyond milliseconds are truncated. A date-time without an offset (ambiguous) is a format
 * problem; one in the right shape that names no instant says which part is wrong.
 */
export function readInstant(text: string): InstantReading {
  const m = ISO_DATE_TIME.exec(text);
  if (m === null) return { ok: false, problem: "format" };
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, "0"));
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return { ok: false, problem: "no such date" };
  if (hour > 23 || minute > 59 || second > 59) return { ok: false, problem: "no such date" };
  let offsetMinutes = 0;
  if (m[8] === undefined) {
    const offsetHours = Number(m[10]);
    const offsetMins = Number(m[11]);
    if (offsetHours > 23 || offsetMins > 59) return { ok: false, problem: "no such offset" };
    offsetMinutes = (m[9] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  const date = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0..99 to 1900..1999.
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, millis);
  const epochMs = date.getTime() - offsetMinutes * 60_000;
  // An offset can push year 0000 into year -1, which has no four-digit UTC form for the events.
  return epochMs < EARLIEST_INSTANT_MS ? { ok: false, problem: "before year 0000" } : { ok: true, epochMs };
}

/** readInstant's epoch milliseconds, or undefined for any text that is not an instant. */
export function parseInstant(text: string): number | undefined {
  const reading = readInstant(text);
  return reading.ok ? reading.epochMs : undefined;
}

/** Formats epoch milliseconds as UTC with milliseconds, e.g. `2026-11-25T22:00:00.000Z`. */
export function formatInstant(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

/**
 * The id of the event for one firing of one version of a timer (CONTRACT §2):
 * `{tenantId}:{serviceCallId}:{dueAtMs}:{generation}`. It is the same for every republish of that
 * firing, so the event stream's duplicate window drops a republish after a crash, while a
 * reschedule that keeps dueAt but changes the timer is a new message.
 */
export function dueEventId(tenantId: string, serviceCallId: string, dueAtMs: number, generation: number, attempt?: number): string {
  // A retry of a tracked timer (CONTRACT §11) is its own message; attempt 1 keeps the §2 id.
  const base = `${tenantId}:${serviceCallId}:${dueAtMs}:${generation}`;
  return attempt === undefined || attempt <= 1 ? base : `${base}:${attempt}`;
}
