/**
 * The service's rule for instants (CONTRACT §2): an ISO 8601 date-time with an offset that names
 * a moment on the calendar. The schemas check the shape; this checks that the date exists, so a
 * month 13 or a 30 February is refused before sending instead of by the service.
 */

const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$/;

/** A valid value, for messages. */
export const INSTANT_EXAMPLE = "2026-03-01T09:00:00Z";
export const INSTANT_FORMAT = `an ISO 8601 date-time with an offset (Z or ±hh:mm), e.g. ${INSTANT_EXAMPLE} or 2026-03-01T10:00:00+01:00`;

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

function daysInMonth(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** What is wrong with `text` as an instant ("there is no month 13"), or undefined when it is one. */
export function instantProblem(text: string): string | undefined {
  const m = ISO_DATE_TIME.exec(text);
  if (m === null) {
    return /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}(:\d{2}([.,]\d+)?)?$/.test(text)
      ? "it has no offset (Z or ±hh:mm)"
      : "it is not ISO 8601 (date, T, time and an offset)";
  }
  const [year, month, day, hour, minute] = [1, 2, 3, 4, 5].map((i) => Number(m[i]));
  const second = m[6] === undefined ? 0 : Number(m[6]);
  if (month! < 1 || month! > 12) return `there is no month ${month}`;
  const days = daysInMonth(year!, month!);
  if (day! < 1 || day! > days) return day === 0 ? "there is no day 0" : `${MONTHS[month! - 1]} ${year} has ${days} days, not ${day}`;
  if (hour! > 23) return `there is no hour ${hour} (00 to 23)`;
  if (minute! > 59) return `there is no minute ${minute} (00 to 59)`;
  if (second > 59) return `there is no second ${second} (00 to 59)`;
  if (m[10] !== undefined && (Number(m[10]) > 23 || Number(m[11]) > 59)) return `the offset ${m[9]}${m[10]}:${m[11]} is out of range`;
  return undefined;
}

/**
 * The epoch milliseconds of `text`, an instant `instantProblem` accepts. Date.parse reads the
 * extended form only: seconds added, `,` as `.`, fractions cut to ms, `+hhmm` as `+hh:mm`.
 */
export function instantMs(text: string): number {
  const m = ISO_DATE_TIME.exec(text)!;
  const fraction = (m[7] ?? "").slice(0, 3).padEnd(3, "0");
  const offset = m[8] !== undefined ? "Z" : `${m[9]}${m[10]}:${m[11]}`;
  return Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6] ?? "00"}.${fraction}${offset}`);
}

/** The full sentence for a member: `/payload/dueAt: "2026-02-30T09:00:00Z" is not a date-time: February 2026 has 28 days, not 30; …`. */
export function instantMessage(member: string, text: string, problem: string): string {
  return `${member}: ${JSON.stringify(text)} is not a date-time: ${problem}; a valid value is ${INSTANT_FORMAT}`;
}
