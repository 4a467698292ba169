import { INSTANT_EXAMPLE, instantProblem } from "../instant-check.js";
import { UsageError } from "./usage-error.js";

/**
 * The instant of `--at`, `--until`, `--due-after`, …: an ISO 8601 date-time with an offset that
 * exists on the calendar, as epoch milliseconds. Anything else is a usage error naming the value,
 * why, and a valid one.
 */
export function instantFlag(flag: string, text: string): number {
  const problem = instantProblem(text.trim());
  if (problem === undefined) return Date.parse(normalized(text.trim()));
  const hint = flag === "at" ? `, or a delay with --in (e.g. --in 10m)` : "";
  throw new UsageError(
    `--${flag} "${text}" is not a date-time: ${problem}; give ISO 8601 with an offset, e.g. ${INSTANT_EXAMPLE} or 2026-03-01T10:00:00+01:00${hint}`,
  );
}

/** Date.parse reads the extended form only: seconds added, `,` as `.`, fractions cut to ms, `+hhmm` as `+hh:mm`. */
function normalized(text: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:[Zz]|([+-]\d{2}):?(\d{2}))$/.exec(text)!;
  const fraction = (m[4] ?? "").slice(0, 3).padEnd(3, "0");
  const offset = m[5] === undefined ? "Z" : `${m[5]}:${m[6]}`;
  return `${m[1]}T${m[2]}:${m[3] ?? "00"}.${fraction}${offset}`;
}
