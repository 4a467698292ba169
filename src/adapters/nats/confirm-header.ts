import type { MsgHdrs } from "@nats-io/transport-node";
import { CONFIRM_HEADER } from "../../app/commands/command-outcomes.js";

/**
 * Whether a command asks for its `CommandOutcome` (CONTRACT §19): `Timer-Confirm: 1`. A message
 * without headers costs one check; headers that cannot be read count as none, as for trace context.
 */
export function asksForConfirmation(readHeaders: () => MsgHdrs | undefined): boolean {
  try {
    return readHeaders()?.get(CONFIRM_HEADER) === "1";
  } catch {
    return false;
  }
}
