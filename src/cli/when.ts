import * as chrono from "chrono-node";
import { parseInstant } from "../domain/due-time.js";

const DURATION_PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/gy;
const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** Parses a duration such as `30s`, `1h30m`, `250ms` or `2d` into milliseconds. */
export function parseDuration(text: string): number | undefined {
  const compact = text.trim().replace(/\s+/g, "");
  if (compact === "") return undefined;
  DURATION_PART.lastIndex = 0;
  let total = 0;
  let consumed = 0;
  for (let match = DURATION_PART.exec(compact); match !== null; match = DURATION_PART.exec(compact)) {
    total += Number(match[1]) * (UNIT_MS[match[2]!] ?? 0);
    consumed = DURATION_PART.lastIndex;
  }
  return consumed === compact.length ? Math.round(total) : undefined;
}

/**
 * The due time of `--at`: an ISO 8601 date-time with offset, or natural language such as
 * `tomorrow 9am` or `next friday 17:00` (chrono-node, in the machine's time zone, never in the past
 * when the phrase has a forward reading).
 */
export function parseAt(text: string, nowMs: number): number | undefined {
  const exact = parseInstant(text.trim());
  if (exact !== undefined) return exact;
  const date = chrono.parseDate(text, new Date(nowMs), { forwardDate: true });
  return date === null ? undefined : date.getTime();
}
