import type { Timer, TimerHistoryEntry, TimerWithHistory } from "../types.js";

const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
const num = (value: unknown): number | undefined => (typeof value === "number" ? value : undefined);

function late(ms: number | undefined): string {
  if (ms === undefined) return "";
  return ms < 1_000 ? `${ms} ms late` : `${(ms / 1_000).toFixed(ms < 10_000 ? 1 : 0)} s late`;
}

/** Members the words below already say; any other member of an entry is shown as `name value`. */
const SAID = new Set([
  "at",
  "kind",
  "type",
  "commandId",
  "outcome",
  "reason",
  "code",
  "eventId",
  "attempt",
  "lateMs",
  "occurrence",
  "published",
  "why",
  "token",
  "via",
  "traceId",
  "timestampMs",
]);

function extras(entry: TimerHistoryEntry): string[] {
  return Object.entries(entry)
    .filter(([name, value]) => !SAID.has(name) && value !== undefined && value !== null)
    .map(([name, value]) => `${name} ${typeof value === "string" ? value : JSON.stringify(value)}`);
}

/**
 * What happened, in a few words: `ScheduleTimer applied (command 3f2a…)`, `fired, attempt 2, 12 ms late`;
 * why, where the service said (ignored, rejected, applied without a change).
 */
export function describeEntry(entry: TimerHistoryEntry): string {
  const parts: string[] = [];
  if (entry.kind === "command") {
    const outcome =
      entry.outcome === "ignored"
        ? `ignored: ${entry.reason ?? "no reason given"}`
        : entry.outcome === "rejected"
          ? `rejected ${entry.code ?? ""}${entry.reason === undefined ? "" : `: ${entry.reason}`}`.trimEnd()
          : entry.outcome === "applied" && entry.reason !== undefined
            ? `applied: ${entry.reason}`
            : (entry.outcome ?? "");
    parts.push(`${entry.type ?? "command"} ${outcome}`.trimEnd());
    if (entry.commandId !== undefined) parts.push(`command ${entry.commandId}`);
    const token = str(entry.token) ?? str(entry.via);
    if (token !== undefined) parts.push(`via ${token}`);
  } else if (entry.kind === "fired" || entry.kind === "missed") {
    parts.push(entry.kind === "fired" ? "fired" : "missed (too late to fire)");
    if (entry.occurrence !== undefined) parts.push(`occurrence ${entry.occurrence}`);
    if (entry.attempt !== undefined) parts.push(`attempt ${entry.attempt}`);
    const lateness = late(entry.lateMs);
    if (lateness !== "") parts.push(lateness);
    if (entry.published === false) parts.push(`not published${str(entry.why) === undefined ? "" : `: ${str(entry.why)}`}`);
    if (entry.eventId !== undefined) parts.push(`event ${entry.eventId}`);
  } else if (entry.kind === "timeout") {
    parts.push("completion timed out");
    if (entry.attempt !== undefined) parts.push(`attempt ${entry.attempt}`);
  } else {
    parts.push(entry.kind);
  }
  parts.push(...extras(entry));
  const traceId = str(entry.traceId);
  if (traceId !== undefined) parts.push(`trace ${traceId}`);
  return parts.join(", ");
}

function timerLine(timer: Timer): string {
  const due = timer.dueAt === null ? "" : `, due ${timer.dueAt}`;
  const occurrence = num(timer.occurrence) === undefined ? "" : `, occurrence ${timer.occurrence}`;
  return `${timer.serviceCallId} (${timer.tenantId}): ${timer.state}${due}, generation ${timer.generation}${occurrence}`;
}

/** A timer's history as a person reads it: a heading line, then one line per entry (time, kind, what happened). */
export function timeline(serviceCallId: string, tenantId: string, reply: TimerWithHistory): string[] {
  if (reply.timer === null && reply.history.length === 0) return [`no timer "${serviceCallId}" for tenant ${tenantId}`];
  const lines = [reply.timer === null ? `${serviceCallId} (${tenantId}): no timer now` : timerLine(reply.timer)];
  if (reply.history.length === 0) lines.push("  (no history kept: TIMER_HISTORY_ENTRIES is 0, or nothing reached it yet)");
  const kindWidth = Math.max(0, ...reply.history.map((e) => e.kind.length));
  for (const entry of reply.history) lines.push(`  ${entry.at}  ${entry.kind.padEnd(kindWidth)}  ${describeEntry(entry)}`);
  return lines;
}
