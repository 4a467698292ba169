import { z } from "zod";
import { cancelTimerPayloadSchema, commandEnvelopeSchema } from "../commands/command-envelope.schema.js";
import { UNKNOWN_TENANT } from "../commands/command-text.js";

/**
 * Shapes of the events the service publishes (CONTRACT §2, §10, §11), for the published JSON
 * Schemas and for consumers' checks. The service builds event text directly
 * (adapters/nats/event-envelopes.ts); tests hold that text to these shapes. Objects stay open to
 * new members, so that a consumer checking against them keeps working when an event gains one.
 */

const { tenantId, serviceCallId } = cancelTimerPayloadSchema.shape;

/** Events carry UTC with milliseconds: `2026-11-25T22:00:00.000Z`. */
export const eventInstantSchema = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, "must be UTC with milliseconds (2026-11-25T22:00:00.000Z)");

/** `data` as stored: any JSON value but null (a null `data` is left out). */
export const timerDataSchema = z.union([z.string(), z.number(), z.boolean(), z.array(z.unknown()), z.record(z.string(), z.unknown())]);

const positiveInt = z.number().int().min(1);

function eventEnvelope<const T extends string, P extends z.ZodType>(type: T, envelopeTenant: z.ZodType<string>, payload: P) {
  return z.object({
    id: z.string().min(1),
    type: z.literal(type),
    tenantId: envelopeTenant,
    correlationId: commandEnvelopeSchema.shape.id.optional(),
    timestampMs: z.number().int().nonnegative(),
    payload,
  });
}

export const dueTimeReachedPayloadSchema = z.object({
  tenantId,
  serviceCallId,
  dueAt: eventInstantSchema,
  reachedAt: eventInstantSchema,
  data: timerDataSchema.optional(),
  generation: positiveInt,
  lateMs: z.number().int(),
  occurrence: positiveInt.optional(),
  missedOccurrences: positiveInt.optional(),
  missedOccurrencesCapped: z.literal(true).optional(),
  attempt: positiveInt.optional(),
});

export const dueTimeMissedPayloadSchema = z.object({
  tenantId,
  serviceCallId,
  dueAt: eventInstantSchema,
  missedAt: eventInstantSchema,
  data: timerDataSchema.optional(),
  generation: positiveInt,
  lateMs: z.number().int(),
  occurrence: positiveInt.optional(),
});

export const REJECTION_CODES = [
  "TOO_LARGE",
  "INVALID_JSON",
  "INVALID_ENVELOPE",
  "UNKNOWN_TYPE",
  "INVALID_FIELD",
  "TENANT_MISMATCH",
  "DUE_TOO_FAR",
  "QUOTA_EXCEEDED",
  "TIMER_FINAL",
] as const;

export const commandRejectedPayloadSchema = z.object({
  code: z.enum(REJECTION_CODES),
  reason: z.string().min(1),
  subject: z.string(),
  commandId: commandEnvelopeSchema.shape.id.optional(),
  serviceCallId: serviceCallId.optional(),
});

export const dueTimeReachedSchema = eventEnvelope("DueTimeReached", tenantId, dueTimeReachedPayloadSchema);
export const dueTimeMissedSchema = eventEnvelope("DueTimeMissed", tenantId, dueTimeMissedPayloadSchema);
export const commandRejectedSchema = eventEnvelope(
  "CommandRejected",
  z.union([tenantId, z.literal(UNKNOWN_TENANT)]),
  commandRejectedPayloadSchema,
);
