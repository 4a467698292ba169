import type { TraceContext } from "../domain/trace-context.js";
import type { REJECTION_CODES } from "./events/event-envelope.schema.js";
/** A timer fired: everything `DueTimeReached` carries (CONTRACT §2); `lateMs` is reachedAt − dueAt. */
export interface DueTimeReached {
  readonly tenantId: string;
  readonly serviceCallId: string;
  readonly dueAtMs: number;
  readonly reachedAtMs: number;
  readonly generation: number;
  /** JSON text of `data`, echoed as is; null → the event has no `data` member. */
  readonly data: string | null;
  readonly correlationId: string | null;
  /** The occurrence of a recurring timer (1, 2, …); null or absent for a one-shot. */
  readonly occurrence?: number | null;
  /** After downtime: how many earlier occurrences this one stands for (CONTRACT §10); 0 or absent: none. */
  readonly missedOccurrences?: number;
  /** More occurrences were missed than are counted one by one: `missedOccurrences` and `occurrence` are lower bounds. */
  readonly missedOccurrencesCapped?: boolean;
  /** A tracked timer's publish (CONTRACT §11): 1, 2, …; absent for an untracked timer. */
  readonly attempt?: number;
  /** The trace the event continues (CONTRACT §13); absent: a new trace. */
  readonly trace?: TraceContext | undefined;
}

/**
 * An occurrence came due more than `maxLatenessMs` ago: everything `DueTimeMissed` carries (CONTRACT
 * §10); `lateMs` is missedAt − dueAt. Same id and `Nats-Msg-Id` as its `DueTimeReached` would have.
 */
export interface DueTimeMissed {
  readonly tenantId: string;
  readonly serviceCallId: string;
  readonly dueAtMs: number;
  readonly missedAtMs: number;
  readonly generation: number;
  readonly data: string | null;
  readonly correlationId: string | null;
  readonly occurrence?: number | null;
  readonly trace?: TraceContext | undefined;
}

/** The codes of CommandRejected (CONTRACT §2, §12), in precedence order; one list with the event schema. */
export type RejectionCode = (typeof REJECTION_CODES)[number];

/** A command was refused: everything `CommandRejected` carries (CONTRACT §2). */
export interface CommandRejected {
  /** Event id; the same for every republish of the rejection of one command. */
  readonly id: string;
  /** The subject's tenant token when valid, else `_unknown`; names the subject published to. */
  readonly tenant: string;
  readonly code: RejectionCode;
  readonly reason: string;
  readonly subject: string;
  readonly commandId?: string;
  readonly serviceCallId?: string;
  readonly correlationId?: string;
  /** The trace of the rejected command (CONTRACT §13); absent: a new trace. */
  readonly trace?: TraceContext | undefined;
}

/**
 * Publishes the service's events. Each method resolves once the broker has durably accepted the
 * event (JetStream publish ack) and rejects otherwise.
 */
export interface TimerEventPublisher {
  publishDueTimeReached(event: DueTimeReached): Promise<void>;
  publishDueTimeMissed(event: DueTimeMissed): Promise<void>;
  publishCommandRejected(event: CommandRejected): Promise<void>;
}
