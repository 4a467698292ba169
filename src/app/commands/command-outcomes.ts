import type { TimerState } from "../../domain/timer.js";
import type { RejectionCode } from "../timer-event-publisher.js";
import { envelopeId, isEnvelope } from "./command-text.js";
import type { RawCommand } from "./command-decoder.js";

/** The header a sender sets to ask for its command's `CommandOutcome` (CONTRACT §19). */
export const CONFIRM_HEADER = "Timer-Confirm";

/** What became of one command: applied, ignored (and why) or rejected (and its §2 code). */
export type OutcomeKind = "applied" | "ignored" | "rejected";

/** The timer as the command left it (or found it, when it changed nothing). */
export interface OutcomeTimer {
  readonly state: TimerState;
  /** Null for a timer that only records a cancel (it never had a due time). */
  readonly dueAtMs: number | null;
  readonly generation: number;
  /** Only for a recurring timer: the occurrence `dueAtMs` is. */
  readonly occurrence?: number;
}

/** Everything a `CommandOutcome` carries (CONTRACT §19), and the tenant whose subject it goes to. */
export interface CommandOutcome {
  /** The command's own tenant (for a rejection: the tenant its `CommandRejected` went to). */
  readonly tenantId: string;
  /** The envelope's `id`; for a message without a readable one, the stream message's id (`{stream}:{seq}:{ms}`). */
  readonly commandId: string;
  readonly serviceCallId?: string;
  readonly outcome: OutcomeKind;
  /** The §2 code, only with `rejected`. */
  readonly code?: RejectionCode;
  readonly reason: string;
  readonly timer?: OutcomeTimer;
}

/**
 * Sends the outcome of a command whose sender asked for it. Fire and forget: the outcome is a
 * courtesy beside the command's real effect, so a send that fails is logged by the adapter and
 * never holds up or fails the batch.
 */
export interface CommandOutcomes {
  send(outcome: CommandOutcome): void;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The id the sender gave a command the decoder refused before reading its id, read again from the
 * body: only a rejected command sent with the header pays for it. A bare payload (or a body that is
 * not an envelope) has none; its stream message id stands in, the id its `CommandRejected` is derived from.
 */
export function commandIdOf(message: RawCommand): string {
  try {
    const body: unknown = JSON.parse(utf8.decode(message.body));
    const id = isEnvelope(body) ? envelopeId(body) : undefined;
    if (id !== undefined) return id;
  } catch {
    // Not JSON: no id of its own.
  }
  return message.sourceId;
}
