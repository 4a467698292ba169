import { z } from "zod";
import { cancelTimerPayloadSchema, commandEnvelopeSchema } from "../commands/command-envelope.schema.js";
import { eventInstantSchema, timerDataSchema } from "../events/event-envelope.schema.js";
import { TIMER_STATES } from "./timer-queries.js";

/**
 * Shapes of query replies (CONTRACT §9, §11, §14), the same over NATS and HTTP; they describe what
 * timer-view.ts builds, for the published JSON Schemas and for clients. Open to new members.
 */

const { tenantId, serviceCallId } = cancelTimerPayloadSchema.shape;
const count = z.number().int().nonnegative();

export const timerViewSchema = z.object({
  tenantId,
  serviceCallId,
  state: z.enum(TIMER_STATES),
  /** Null only for the record of a cancel of a key that was never scheduled. */
  dueAt: eventInstantSchema.nullable(),
  generation: count,
  commandTimestampMs: count,
  data: timerDataSchema.optional(),
  correlationId: commandEnvelopeSchema.shape.id.optional(),
  reachedAt: eventInstantSchema.optional(),
  repeat: z.record(z.string(), z.unknown()).optional(),
  occurrence: count.optional(),
  attempt: count.optional(),
  result: z.string().optional(),
  reason: z.string().optional(),
  firedAt: eventInstantSchema.optional(),
  completedAt: eventInstantSchema.optional(),
  durationMs: z.number().int().optional(),
  createdBy: z.string().optional(),
  createdVia: z.string().optional(),
  /** The timer's last change: every view has it. */
  updatedAt: eventInstantSchema,
  /** The trace of the command that last set what the timer fires; a tombstone has none. */
  traceId: z
    .string()
    .regex(/^[0-9a-f]{32}$/)
    .optional(),
});

/** One entry of a timer's history (CONTRACT §19, domain/timer-history.ts), by `kind`. */
export const historyEntrySchema = z.discriminatedUnion("kind", [
  z.object({
    at: eventInstantSchema,
    kind: z.literal("command"),
    type: z.string(),
    commandId: z.string().optional(),
    timestampMs: count,
    traceId: z.string().optional(),
    outcome: z.enum(["applied", "ignored", "rejected"]),
    code: z.string().optional(),
    reason: z.string().optional(),
    operator: z.object({ via: z.enum(["http", "nats"]), token: z.boolean() }).optional(),
  }),
  z.object({
    at: eventInstantSchema,
    kind: z.enum(["fired", "missed"]),
    eventId: z.string(),
    attempt: count,
    lateMs: z.number().int(),
    occurrence: count.optional(),
    published: z.boolean(),
    reason: z.string().optional(),
  }),
  z.object({ at: eventInstantSchema, kind: z.literal("timeout"), attempt: count, then: z.string() }),
]);

/** `history` only when the request asked for it (CONTRACT §19): oldest first, empty for an unknown timer. */
export const getReplySchema = z.object({ timer: timerViewSchema.nullable(), history: z.array(historyEntrySchema).optional() });

export const listReplySchema = z.object({ timers: z.array(timerViewSchema), nextCursor: z.string().nullable() });

export const statsReplySchema = z.object({
  tenantId,
  scheduled: count,
  reached: count,
  missed: count,
  cancelled: count,
  fired: count,
  completed: count,
  failed: count,
  timedOut: count,
  nextDueAt: eventInstantSchema.nullable(),
  oldestOverdueAt: eventInstantSchema.nullable(),
  avgDurationMs: z.number().nullable(),
});

/** The body of an error reply (NATS: with the `Nats-Service-Error-Code` header; HTTP: the status). */
export const queryErrorSchema = z.object({ error: z.object({ code: z.string(), message: z.string() }) });
