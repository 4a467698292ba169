import type { FiringDecision, FiringTimer } from "../../domain/firing-rules.js";

/** One firing to decide on the catch-up thread. */
export interface CatchUpRequest {
  readonly id: number;
  readonly timer: FiringTimer;
  readonly nowMs: number;
  readonly prefixCancelTs: number | null;
}

/** Its answer: the decision, or why there is none. */
export type CatchUpReply =
  | { readonly id: number; readonly decision: FiringDecision; readonly error?: undefined }
  | { readonly id: number; readonly error: string; readonly decision?: undefined };
