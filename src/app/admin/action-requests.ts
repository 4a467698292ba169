import { z } from "zod";
import { isServiceCallId } from "../commands/command-text.js";
import { decodeCursor } from "../queries/query-requests.js";

/**
 * Bodies of the HTTP operator actions (CONTRACT §14). Unknown members are refused like everywhere
 * else, so a misspelt filter never widens a bulk action.
 */

/** Commands one bulk retry publishes at most (CONTRACT §14). */
export const MAX_BULK_RETRY = 10_000;

const prefix = z.string().refine(isServiceCallId, "must be 1..256 code points without control characters");

export const bulkRetryRequestSchema = z.strictObject({
  state: z.enum(["Failed", "TimedOut", "Missed"]),
  serviceCallIdPrefix: prefix.nullish(),
  /** Fewer than the 10,000 of one call: lets a client page in smaller steps. */
  limit: z.number().int().min(1).max(MAX_BULK_RETRY).nullish(),
  /** `nextCursor` of the previous call: continues after the timers it retried. */
  cursor: z
    .string()
    .transform((text, ctx) => {
      const position = decodeCursor(text);
      if (position === undefined) {
        ctx.addIssue({ code: "custom", message: "is not a cursor returned by a bulk retry" });
        return z.NEVER;
      }
      return position;
    })
    .nullish(),
});

export const cancelPrefixRequestSchema = z.strictObject({ serviceCallIdPrefix: prefix });

/** Single retry and cancel take no body, or an empty object. */
export const emptyRequestSchema = z.strictObject({});

export type BulkRetryRequest = z.output<typeof bulkRetryRequestSchema>;
