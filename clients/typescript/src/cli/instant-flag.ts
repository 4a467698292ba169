import { INSTANT_EXAMPLE, instantMs, instantProblem } from "../instant-check.js";
import { UsageError } from "./usage-error.js";

/**
 * The instant of `--at`, `--until`, `--due-after`, …: an ISO 8601 date-time with an offset that
 * exists on the calendar, as epoch milliseconds. Anything else is a usage error naming the value,
 * why, and a valid one.
 */
export function instantFlag(flag: string, text: string): number {
  const problem = instantProblem(text.trim());
  if (problem === undefined) return instantMs(text.trim());
  const hint = flag === "at" ? `, or a delay with --in (e.g. --in 10m)` : "";
  throw new UsageError(
    `--${flag} "${text}" is not a date-time: ${problem}; give ISO 8601 with an offset, e.g. ${INSTANT_EXAMPLE} or 2026-03-01T10:00:00+01:00${hint}`,
  );
}
