import { z } from "zod";
import { isCodePointText, isServiceCallId, isTenantId } from "./command-text.js";

/** Shapes of what arrives on a command subject (CONTRACT §2), checked at the edge. */

const messageId = z.string().refine((s) => isCodePointText(s, 1, 128), "must be 1..128 code points");

export const commandEnvelopeSchema = z.object({
  id: messageId,
  type: z.string(),
  tenantId: z.string().refine(isTenantId, "must be a valid tenant id"),
  correlationId: messageId.nullish(),
  timestampMs: z.number().int().nonnegative(),
  payload: z.record(z.string(), z.unknown()),
});

const tenantId = z.string().refine(isTenantId, "must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$ and not be _unknown");
const serviceCallId = z.string().refine(isServiceCallId, "must be 1..256 code points without control characters");

export const cancelTimerPayloadSchema = z.object({ tenantId, serviceCallId });

/** `repeat` (CONTRACT §10): shapes only; which members go together is checked by the decoder. */
const repeatSchema = z.object({
  everyMs: z.number().int("must be an integer").min(1000, "must be at least 1000").optional(),
  cron: z.string().optional(),
  timezone: z.string().optional(),
  until: z.string().optional(),
  maxOccurrences: z.number().int("must be an integer").min(1, "must be at least 1").optional(),
});

/** `delivery` (CONTRACT §11); defaults filled in by the decoder. */
const deliverySchema = z.object({
  maxRetries: z
    .number({ error: "must be an integer 0…100" })
    .int("must be an integer")
    .min(0, "must be at least 0")
    .max(100, "must be at most 100"),
  backoffMs: z.number().int("must be an integer").min(100, "must be at least 100").optional(),
  completionTimeoutMs: z.number().int("must be an integer").min(1000, "must be at least 1000").optional(),
});

const auditText = z.string().refine((s) => isCodePointText(s, 1, 128), "must be 1..128 code points");

export const scheduleTimerPayloadSchema = z.object({
  tenantId,
  serviceCallId,
  dueAt: z.string(),
  data: z.unknown().optional(),
  repeat: repeatSchema.nullish(),
  maxLatenessMs: z.number().int("must be an integer").min(0, "must be at least 0").nullish(),
  delivery: deliverySchema.nullish(),
  createdBy: auditText.nullish(),
  createdVia: auditText.nullish(),
});

/** `TimerCompleted` (CONTRACT §11). */
export const timerCompletedPayloadSchema = z.object({
  tenantId,
  serviceCallId,
  result: z
    .string()
    .refine((s) => isCodePointText(s, 0, 1024), "must be at most 1024 code points")
    .nullish(),
});

/** `TimerFailed` (CONTRACT §11). */
export const timerFailedPayloadSchema = z.object({
  tenantId,
  serviceCallId,
  reason: z.string().refine((s) => isCodePointText(s, 1, 1024), "must be 1..1024 code points"),
});

export type RepeatPayload = z.infer<typeof repeatSchema>;

export const cancelTimersByPrefixPayloadSchema = z.object({
  tenantId,
  serviceCallIdPrefix: z.string().refine(isServiceCallId, "must be 1..256 code points without control characters"),
});

export type CommandEnvelope = z.infer<typeof commandEnvelopeSchema>;
