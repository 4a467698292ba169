import type { z } from "zod";
import { formatInstant } from "../../domain/due-time.js";
import type { Recurrence, RecurrenceCalendar } from "../../domain/recurrence.js";
import type { Timer } from "../../domain/timer.js";
import type { TransferRecord } from "./timer-transfer.js";
import {
  EXPORT_FORMAT,
  EXPORT_VERSION,
  headerLineSchema,
  prefixCancelLineSchema,
  timerLineSchema,
  type CheckedTimerLine,
  type PrefixCancelLine,
  type TimerLine,
} from "./transfer-line.schema.js";

/**
 * The NDJSON lines of an export (CONTRACT §18): the header, then one object per timer or prefix
 * cancel. Instants are UTC ISO strings as in events; `data` stays the JSON text the store keeps, so
 * that events after a move carry the same bytes. Members are written in one fixed order and only
 * when set, so that equal stores give equal files.
 */

/** A line of an import that is not what it must be; `line` counts from 1 (the header). */
export class TransferLineError extends Error {
  override readonly name = "TransferLineError";
  constructor(
    readonly line: number,
    readonly problem: string,
  ) {
    super(`line ${line}: ${problem}`);
  }
}

export interface ExportHeader {
  readonly exportedAtMs: number;
  /** The store the file was read from. */
  readonly store: string;
  /** Set when the export holds one tenant's timers. */
  readonly tenantId?: string;
}

export function encodeHeader(header: ExportHeader): string {
  return JSON.stringify({
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    exportedAt: formatInstant(header.exportedAtMs),
    store: header.store,
    ...(header.tenantId === undefined ? {} : { tenantId: header.tenantId }),
  });
}

const HEADER_EXAMPLE = `{"format":"${EXPORT_FORMAT}","version":${EXPORT_VERSION},…}`;

/** Checks the first line of an import. */
export function decodeHeader(text: string | undefined): void {
  if (text === undefined || text.trim() === "") {
    throw new TransferLineError(1, `missing header: the first line must be ${HEADER_EXAMPLE}`);
  }
  const json = parseJson(text, 1);
  const header = headerLineSchema.safeParse(json);
  if (!header.success) {
    const wrongVersion = header.error.issues.every((issue) => issue.path[0] === "version");
    if (!wrongVersion || typeof json !== "object" || json === null) {
      throw new TransferLineError(1, `not a timer-service export: the first line must be ${HEADER_EXAMPLE}`);
    }
  }
  const version = (json as { version?: unknown }).version;
  if (version !== EXPORT_VERSION) {
    throw new TransferLineError(1, `unknown version ${JSON.stringify(version)}: this release reads version ${EXPORT_VERSION}`);
  }
}

/**
 * One export line, with the timer's history (CONTRACT §19) when the record carries one: an export
 * for the previous release (whose import refuses a member it does not know) reads none.
 */
export function encodeRecord(record: TransferRecord): string {
  if (record.kind === "prefixCancel") {
    const { tenantId, serviceCallIdPrefix, commandTs, recordedAtMs } = record.prefixCancel;
    const line: PrefixCancelLine = {
      kind: "prefixCancel",
      tenantId,
      serviceCallIdPrefix,
      commandTs,
      recordedAt: formatInstant(recordedAtMs),
    };
    return JSON.stringify(line);
  }
  const { history } = record.timer;
  // The stored history is JSON already: spliced in as it is, not parsed and written again.
  const line = JSON.stringify(timerLine(record.timer));
  return history == null || history.length <= 2 ? line : `${line.slice(0, -1)},"history":${history}}`;
}

/** Built member by member, not by spreads: an export writes millions of these. */
function timerLine(t: Timer): TimerLine {
  const line: Record<string, unknown> = {
    kind: "timer",
    tenantId: t.tenantId,
    serviceCallId: t.serviceCallId,
    state: t.state,
    dueAt: t.dueAtMs === null ? null : formatInstant(t.dueAtMs),
    generation: t.generation,
    commandTs: t.commandTs,
    registeredAt: formatInstant(t.registeredAtMs),
    updatedAt: formatInstant(t.updatedAtMs),
  };
  if (t.reachedAtMs != null) line.reachedAt = formatInstant(t.reachedAtMs);
  if (t.data != null) line.data = t.data;
  if (t.correlationId != null) line.correlationId = t.correlationId;
  if (t.repeat != null) line.repeat = repeatLine(t.repeat);
  line.occurrence = t.occurrence;
  if (t.maxLatenessMs != null) line.maxLatenessMs = t.maxLatenessMs;
  if (t.delivery) {
    const { maxRetries, backoffMs, completionTimeoutMs } = t.delivery;
    line.delivery = { maxRetries, backoffMs, completionTimeoutMs };
  }
  if (t.createdBy != null) line.createdBy = t.createdBy;
  if (t.createdVia != null) line.createdVia = t.createdVia;
  if (t.attempt != null && t.attempt !== 0) line.attempt = t.attempt;
  if (t.firedAtMs != null) line.firedAt = formatInstant(t.firedAtMs);
  if (t.completedAtMs != null) line.completedAt = formatInstant(t.completedAtMs);
  if (t.result != null) line.result = t.result;
  if (t.lastReason != null) line.lastReason = t.lastReason;
  if (t.deadlineAtMs != null) line.deadlineAt = formatInstant(t.deadlineAtMs);
  if (t.traceId != null) {
    line.traceId = t.traceId;
    if (t.traceFlags != null) line.traceFlags = t.traceFlags;
    if (t.traceState != null) line.traceState = t.traceState;
    if (t.traceSpanId != null) line.traceSpanId = t.traceSpanId;
  }
  return line as TimerLine;
}

function repeatLine(rule: Recurrence): NonNullable<TimerLine["repeat"]> {
  return {
    ...(rule.everyMs !== undefined ? { everyMs: rule.everyMs } : { cron: rule.cron, timezone: rule.timezone }),
    ...(rule.untilMs === null ? {} : { until: formatInstant(rule.untilMs) }),
    ...(rule.maxOccurrences === null ? {} : { maxOccurrences: rule.maxOccurrences }),
    firstDueAt: formatInstant(rule.firstDueAtMs),
  };
}

/**
 * Reads line `lineNumber` (2, 3, …) of an import. With a `calendar`, a cron rule or time zone the
 * service could not compute occurrences of is refused here rather than when the timer falls due.
 */
export function decodeRecord(text: string, lineNumber: number, calendar?: RecurrenceCalendar): TransferRecord {
  const json = parseJson(text, lineNumber);
  const kind = typeof json === "object" && json !== null && !Array.isArray(json) ? (json as { kind?: unknown }).kind : undefined;
  if (kind === "prefixCancel") {
    const line = check(prefixCancelLineSchema, json, lineNumber);
    return {
      kind: "prefixCancel",
      prefixCancel: {
        tenantId: line.tenantId,
        serviceCallIdPrefix: line.serviceCallIdPrefix,
        commandTs: line.commandTs,
        recordedAtMs: line.recordedAt,
      },
    };
  }
  if (kind !== "timer") {
    throw new TransferLineError(
      lineNumber,
      `kind: must be "timer" or "prefixCancel", got ${kind === undefined ? "none" : JSON.stringify(kind)}`,
    );
  }
  const line = check(timerLineSchema, json, lineNumber);
  if (line.repeat?.cron !== undefined && calendar !== undefined) {
    const problem = calendar.problem(line.repeat.cron, line.repeat.timezone!);
    if (problem !== undefined) throw new TransferLineError(lineNumber, `repeat.${problem.field}: ${problem.reason}`);
  }
  return { kind: "timer", timer: timerOf(line) };
}

/** The Timer of a checked line, shaped as the stores read timers back (unset members absent). */
function timerOf(line: CheckedTimerLine): Timer {
  const repeat = line.repeat;
  const timer: Record<string, unknown> = {
    tenantId: line.tenantId,
    serviceCallId: line.serviceCallId,
    state: line.state,
    dueAtMs: line.dueAt,
    data: line.data ?? null,
    correlationId: line.correlationId ?? null,
    commandTs: line.commandTs,
    generation: line.generation,
    registeredAtMs: line.registeredAt,
    reachedAtMs: line.reachedAt ?? null,
    updatedAtMs: line.updatedAt,
    repeat:
      repeat === undefined
        ? null
        : {
            ...(repeat.everyMs !== undefined ? { everyMs: repeat.everyMs } : { cron: repeat.cron!, timezone: repeat.timezone! }),
            untilMs: repeat.until ?? null,
            maxOccurrences: repeat.maxOccurrences ?? null,
            firstDueAtMs: repeat.firstDueAt,
          },
    occurrence: line.occurrence,
    maxLatenessMs: line.maxLatenessMs ?? null,
  };
  if (line.delivery !== undefined) timer.delivery = line.delivery;
  if (line.createdBy !== undefined) timer.createdBy = line.createdBy;
  if (line.createdVia !== undefined) timer.createdVia = line.createdVia;
  if (line.attempt !== undefined) timer.attempt = line.attempt;
  if (line.firedAt !== undefined) timer.firedAtMs = line.firedAt;
  if (line.completedAt !== undefined) timer.completedAtMs = line.completedAt;
  if (line.result !== undefined) timer.result = line.result;
  if (line.lastReason !== undefined) timer.lastReason = line.lastReason;
  if (line.deadlineAt !== undefined) timer.deadlineAtMs = line.deadlineAt;
  if (line.traceId !== undefined) {
    timer.traceId = line.traceId;
    timer.traceFlags = line.traceFlags ?? 0;
    timer.traceState = line.traceState ?? null;
    timer.traceSpanId = line.traceSpanId ?? null;
  }
  // Written again from the checked entries: each starts with its `at`, as appendHistory needs.
  if (line.history !== undefined && line.history.length > 0) timer.history = JSON.stringify(line.history);
  return timer as unknown as Timer;
}

function parseJson(text: string, lineNumber: number): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new TransferLineError(lineNumber, `not JSON: ${(error as Error).message}`);
  }
}

function check<T>(schema: z.ZodType<T>, json: unknown, lineNumber: number): T {
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  throw new TransferLineError(
    lineNumber,
    describeIssue(parsed.error, json, schema === (timerLineSchema as unknown) ? TIMER_MEMBERS : PREFIX_CANCEL_MEMBERS),
  );
}

const TIMER_MEMBERS = Object.keys(timerLineSchema.shape);
const PREFIX_CANCEL_MEMBERS = Object.keys(prefixCancelLineSchema.shape);

/** The first problem, as `member: what is wrong` (a missing member and an unknown one said as such). */
function describeIssue(error: z.ZodError, json: unknown, members: readonly string[]): string {
  const issue = error.issues[0]!;
  if (issue.code === "unrecognized_keys") {
    const where = issue.path.length === 0 ? "" : `${issue.path.join(".")}: `;
    return `${where}unknown member ${issue.keys.map((k) => JSON.stringify(k)).join(", ")}${issue.path.length === 0 ? `; valid members: ${members.join(", ")}` : ""}`;
  }
  const path = issue.path.map(String).join(".");
  let value: unknown = json;
  for (const step of issue.path)
    value = value === null || typeof value !== "object" ? undefined : (value as Record<PropertyKey, unknown>)[step as PropertyKey];
  if (value === undefined && issue.code === "invalid_type") return `${path}: missing; it ${issue.message}`;
  return `${path === "" ? "line" : path}: ${issue.message}${value === undefined || (issue.code === "custom" && issue.params?.combination === true) ? "" : `, got ${shortJson(value)}`}`;
}

function shortJson(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}
