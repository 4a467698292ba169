import { z } from "zod";
import { TIMER_STATES } from "../queries/timer-queries.js";
import { eventInstantSchema, REJECTION_CODES } from "../events/event-envelope.schema.js";
import { cancelTimerPayloadSchema } from "./command-envelope.schema.js";

/**
 * The `CommandOutcome` a command sent with `Timer-Confirm: 1` gets (CONTRACT §19), for the published
 * JSON Schema and for tests; the service builds its text in adapters/nats/nats-command-outcomes.ts.
 * Open to new members, like the events.
 */
export const commandOutcomeSchema = z
  .object({
    type: z.literal("CommandOutcome"),
    commandId: z.string().min(1).describe("The command envelope's id; for a message without a readable one, {stream}:{sequence}:{ms}."),
    serviceCallId: cancelTimerPayloadSchema.shape.serviceCallId.optional(),
    outcome: z.enum(["applied", "ignored", "rejected"]),
    code: z.enum(REJECTION_CODES).optional().describe("Only with rejected: the CommandRejected code (CONTRACT §2)."),
    reason: z.string().min(1).describe("Why: what was applied, why it was ignored, or the CommandRejected reason."),
    timer: z
      .object({
        state: z.enum(TIMER_STATES),
        dueAt: eventInstantSchema.nullable().describe("Null for a timer that only records a cancel."),
        generation: z.number().int().min(1),
        occurrence: z.number().int().min(1).optional().describe("Only for a recurring timer."),
      })
      .optional()
      .describe("The timer as the command left it (or found it); absent for a prefix cancel and a message that could not be read."),
  })
  .describe("The outcome of one command sent with the header Timer-Confirm: 1; core NATS, in no stream.");
