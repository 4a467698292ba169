import { z } from "zod";
import { cancelTimerPayloadSchema } from "./command-envelope.schema.js";

/** `RetryTimer` (CONTRACT §14): the same key members as `CancelTimer`. */
export const retryTimerPayloadSchema = z.object({ ...cancelTimerPayloadSchema.shape });
