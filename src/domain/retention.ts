/**
 * Retention (CONTRACT §7): how long the service remembers a timer after it reached a final state,
 * and the rule that keeps §3.2 true once that history may be gone.
 */

/** The states after which a timer never fires again on its own; retention may delete them. */
export const FINAL_STATES = ["Reached", "Cancelled", "Missed", "Completed", "Failed", "TimedOut"] as const;

/** Rows whose last change is before this instant may be deleted; undefined when retention is off (0). */
export function retentionCutoffMs(nowMs: number, retentionMs: number): number | undefined {
  return retentionMs > 0 ? nowMs - retentionMs : undefined;
}

/**
 * A command sent before `now − retention` is ignored (outcome `ignored`) without reading storage:
 * the timer it names may have been deleted, and applying it to an empty key could resurrect a
 * timer that a newer, forgotten command had cancelled or fired. Retention 0 keeps everything, so
 * no command is too old.
 */
export function isBeyondRetention(commandTimestampMs: number, nowMs: number, retentionMs: number): boolean {
  const cutoff = retentionCutoffMs(nowMs, retentionMs);
  return cutoff !== undefined && commandTimestampMs < cutoff;
}
