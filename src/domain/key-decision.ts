import type { Timer } from "./timer.js";

/**
 * What a rule about one key (a report, a retry) decides: the `accepted` and `ignored` cases of
 * `CommandDecision` (command-rules.ts), which every such decision is. Declared apart so that those
 * rules need not import the command rules that call them (no import circle).
 */
export type KeyDecision =
  | { readonly outcome: "accepted"; readonly previous: Timer | undefined; readonly next?: Timer }
  | {
      readonly outcome: "ignored";
      readonly previous: Timer | undefined;
      readonly next?: Timer;
      /**
       * A report for a tracked timer that is due but not yet recorded `Fired`: its event may be out
       * already, its record on the way (publish first, then record). Worth asking again shortly.
       */
      readonly retryLater?: boolean;
    };

/**
 * §3.2: a decision that wrote the timer with the command's `timestampMs` as its `commandTs`, though it
 * changed nothing else (a newer re-send, a newer cancel of a cancelled timer), applied the command.
 */
export function appliedWithoutChange(
  decision: { readonly next?: { readonly commandTs: number } | undefined },
  timestampMs: number,
): boolean {
  return decision.next !== undefined && decision.next.commandTs === timestampMs;
}
