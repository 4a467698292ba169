import { z } from "zod";
import { parseInstant } from "../../domain/due-time.js";
import { isCodePointText, isServiceCallId, isTenantId } from "../commands/command-text.js";
import { MAX_DATA_BYTES } from "../commands/command-decoder.js";
import { TIMER_STATES } from "../queries/timer-queries.js";
import { historyEntrySchema } from "../queries/query-replies.schema.js";
import { MAX_RETRIES_LIMIT, MIN_BACKOFF_MS, MIN_COMPLETION_TIMEOUT_MS } from "../../domain/delivery-rules.js";

/**
 * The shapes of an export's lines (CONTRACT §18), checked member by member on import: a file may
 * have been edited, cut or concatenated by hand, and a timer that passes here must be one the
 * service can fire. Messages say what a valid value looks like; the codec prefixes line and member.
 */

export const EXPORT_FORMAT = "timer-service-export";
export const EXPORT_VERSION = 1;

const INSTANT_PROBLEM = "must be an ISO 8601 date-time with an offset, like 2026-12-01T09:00:00.000Z";

/** An instant, read into epoch milliseconds as it is checked (parsed once: an import reads millions). */
const instant = z.string({ error: INSTANT_PROBLEM }).transform((text, context) => {
  const ms = parseInstant(text);
  if (ms === undefined) {
    context.addIssue({ code: "custom", message: INSTANT_PROBLEM });
    return z.NEVER;
  }
  return ms;
});

const count = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .number({ error: `must be an integer from ${min} to ${max}` })
    .int(`must be an integer from ${min} to ${max}`)
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`);

/** Postgres keeps these in `integer` columns. */
const INT32_MAX = 2_147_483_647;

const text = (min: number, max: number) =>
  z
    .string({ error: `must be a string of ${min}..${max} code points` })
    .refine((s) => isCodePointText(s, min, max), `must be ${min}..${max} code points`);

const tenantId = z
  .string({ error: "must be a tenant id (^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$)" })
  .refine(isTenantId, "must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$ and not be _unknown");
const serviceCallId = z
  .string({ error: "must be 1..256 code points without control characters" })
  .refine(isServiceCallId, "must be 1..256 code points without control characters");

const jsonText = z
  .string({ error: 'must be the JSON text of the timer\'s data, like "{\\"invoice\\":42}"' })
  .refine((s) => Buffer.byteLength(s, "utf8") <= MAX_DATA_BYTES, `must be at most ${MAX_DATA_BYTES} UTF-8 bytes`)
  .refine((s) => {
    try {
      JSON.parse(s);
      return true;
    } catch {
      return false;
    }
  }, 'must be the JSON text of the timer\'s data, like "{\\"invoice\\":42}"');

/** The stored `repeat` rule (recurrenceText's shape): interval or cron + zone, bounds, first occurrence. */
const repeatSchema = z
  .strictObject({
    everyMs: count(1_000).optional(),
    cron: z.string({ error: "must be a 5-field cron expression" }).optional(),
    timezone: z.string({ error: "must be an IANA time zone" }).optional(),
    until: instant.optional(),
    maxOccurrences: count(1).optional(),
    firstDueAt: instant,
  })
  .refine((r) => (r.everyMs !== undefined) !== (r.cron !== undefined), "must have exactly one of everyMs or cron")
  .refine((r) => (r.cron === undefined) === (r.timezone === undefined), "cron and timezone go together");

const deliverySchema = z.strictObject({
  maxRetries: count(0, MAX_RETRIES_LIMIT),
  backoffMs: count(MIN_BACKOFF_MS),
  completionTimeoutMs: count(MIN_COMPLETION_TIMEOUT_MS),
});

/** States only a timer with `delivery` reaches (CONTRACT §11). */
const TRACKED_STATES: ReadonlySet<string> = new Set(["Fired", "Completed", "Failed", "TimedOut"]);

export const timerLineSchema = z
  .strictObject({
    kind: z.literal("timer"),
    tenantId,
    serviceCallId,
    state: z.enum(TIMER_STATES, { error: `must be one of ${TIMER_STATES.join(", ")}` }),
    dueAt: instant.nullable(),
    generation: count(1, INT32_MAX),
    commandTs: count(0),
    registeredAt: instant,
    updatedAt: instant,
    reachedAt: instant.optional(),
    data: jsonText.optional(),
    correlationId: text(1, 128).optional(),
    repeat: repeatSchema.optional(),
    occurrence: count(1),
    maxLatenessMs: count(0).optional(),
    delivery: deliverySchema.optional(),
    createdBy: text(1, 128).optional(),
    createdVia: text(1, 128).optional(),
    attempt: count(1, INT32_MAX).optional(),
    firedAt: instant.optional(),
    completedAt: instant.optional(),
    result: text(0, 1024).optional(),
    lastReason: text(1, 1024).optional(),
    deadlineAt: instant.optional(),
    traceId: z
      .string({ error: "must be 32 lower-case hex digits, not all zero" })
      .regex(/^(?!0{32})[0-9a-f]{32}$/, "must be 32 lower-case hex digits, not all zero")
      .optional(),
    traceFlags: count(0, 255).optional(),
    traceState: text(0, 512).optional(),
    traceSpanId: z
      .string({ error: "must be 16 lower-case hex digits" })
      .regex(/^[0-9a-f]{16}$/, "must be 16 lower-case hex digits")
      .optional(),
    /** The timer's history (CONTRACT §19), oldest first; absent in exports of stores without one. */
    history: z.array(historyEntrySchema).max(1000, "must have at most 1000 entries").optional(),
  })
  .superRefine((line, context) => {
    // Marked, so that the message does not echo the member's value: the problem is the combination.
    const problem = (path: string, message: string) =>
      context.addIssue({ code: "custom", path: [path], message, params: { combination: true } });
    if (line.dueAt === null && line.state !== "Cancelled") problem("dueAt", "must be set unless the state is Cancelled");
    if (line.repeat !== undefined && line.delivery !== undefined) problem("delivery", "cannot go with repeat (CONTRACT §11)");
    if (TRACKED_STATES.has(line.state) && line.delivery === undefined) problem("delivery", `is required in state ${line.state}`);
    if (line.state === "Fired" && line.deadlineAt === undefined) problem("deadlineAt", "is required in state Fired");
    if (line.traceId === undefined && line.traceFlags !== undefined) problem("traceFlags", "needs traceId");
    if (line.traceId === undefined && line.traceState !== undefined) problem("traceState", "needs traceId");
    if (line.traceId === undefined && line.traceSpanId !== undefined) problem("traceSpanId", "needs traceId");
    if (line.traceId !== undefined && line.traceFlags === undefined) problem("traceFlags", "is required with traceId");
  });

export const prefixCancelLineSchema = z.strictObject({
  kind: z.literal("prefixCancel"),
  tenantId,
  serviceCallIdPrefix: serviceCallId,
  commandTs: count(0),
  recordedAt: instant,
});

export const headerLineSchema = z.looseObject({
  format: z.literal(EXPORT_FORMAT),
  version: z.number(),
  exportedAt: instant.optional(),
  store: z.string().optional(),
  tenantId: tenantId.optional(),
});

/** A timer line as written (instants as text). */
export type TimerLine = z.input<typeof timerLineSchema>;
/** A checked timer line (instants as epoch milliseconds). */
export type CheckedTimerLine = z.output<typeof timerLineSchema>;
export type PrefixCancelLine = z.input<typeof prefixCancelLineSchema>;
