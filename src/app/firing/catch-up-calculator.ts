import type { FiringDecision, FiringTimer } from "../../domain/firing-rules.js";

/**
 * Decides the firing of a timer whose catch-up is long (a cron rule in a zone with DST changes,
 * due since long ago: CONTRACT §10) away from the thread that serves every tenant, so that one
 * tenant's catch-ups cost that tenant time and nobody else's (CONTRACT §12). Runs `decideFiring`
 * itself, with a calendar of its own.
 */
export interface CatchUpCalculator {
  decide(timer: FiringTimer, nowMs: number, prefixCancelTs: number | null): Promise<FiringDecision>;
  close(): Promise<void>;
}
