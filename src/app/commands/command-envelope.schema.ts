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

export const scheduleTimerPayloadSchema = z.object({
  tenantId,
  serviceCallId,
  dueAt: z.string(),
  data: z.unknown().optional(),
});

export type CommandEnvelope = z.infer<typeof commandEnvelopeSchema>;
