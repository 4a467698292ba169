/** Public types of `@timer-service/client` (messages as in the service's CONTRACT §2, §9–§11, §14). */

export type TimerState = "Scheduled" | "Reached" | "Cancelled" | "Missed" | "Fired" | "Completed" | "Failed" | "TimedOut";

/** A recurrence: every `everyMs` (≥ 1000), or a 5-field `cron` rule in an IANA `timezone` (default UTC). */
export type Repeat = ({ everyMs: number; cron?: never; timezone?: never } | { cron: string; timezone?: string; everyMs?: never }) & {
  /** No occurrence after this instant. */
  until?: Date | string;
  maxOccurrences?: number;
};

/** Completion tracking: the event is re-published until `complete`/`fail` or the attempts run out. */
export interface Delivery {
  maxRetries: number;
  backoffMs?: number;
  completionTimeoutMs?: number;
}

/** Envelope members and headers every command may carry. */
export interface CommandOptions {
  /** Copied into the events this command causes. 1..128 characters. */
  correlationId?: string;
  /**
   * The command's id (default: 128 random bits, unguessable); also its `Nats-Msg-Id`, so a re-send
   * with the same id is dropped by the stream. A chosen id must be unguessable too: the commands
   * stream is shared by all tenants, and another tenant's command with the same id within the
   * stream's duplicate window is dropped as a duplicate.
   */
  id?: string;
  /** When the command was made (default: now); the service orders commands of one timer by it. */
  timestampMs?: number;
  /** W3C Trace Context headers sent with the command. */
  traceparent?: string;
  tracestate?: string;
  /**
   * Wait for the service's `CommandOutcome` (header `Timer-Confirm: 1`): resolve once the command
   * is applied or ignored, reject with `TimerRejectedError` when it is rejected.
   */
  confirm?: boolean;
}

/** What the service did with a command sent with `confirm: true` (CONTRACT §19). */
export interface CommandOutcome {
  readonly type: "CommandOutcome";
  readonly commandId: string;
  readonly serviceCallId?: string;
  readonly outcome: "applied" | "ignored" | "rejected";
  /** The CommandRejected code of a rejected command. */
  readonly code?: string;
  /** Why: for `ignored` e.g. an older timestampMs or a timer closed to commands. */
  readonly reason: string;
  /** The timer after the command. */
  readonly timer?: { readonly state: TimerState; readonly dueAt: string | null; readonly generation: number; readonly occurrence?: number };
}

/** A confirmed send: where the command was stored, and what the service did with it. */
export type ConfirmedResult = SendResult & Omit<CommandOutcome, "type" | "outcome"> & { readonly outcome: "applied" | "ignored" };

/** One entry of a timer's history (CONTRACT §19), oldest first. */
export interface TimerHistoryEntry {
  /** When it happened, ISO 8601 UTC. */
  readonly at: string;
  readonly kind: "command" | "fired" | "missed" | "timeout" | (string & {});
  /** `command`: the command's type, id, timestamp and what became of it. */
  readonly type?: string;
  readonly commandId?: string;
  readonly timestampMs?: number;
  readonly outcome?: "applied" | "ignored" | "rejected";
  readonly reason?: string;
  readonly code?: string;
  /** `fired`, `missed`: the event and which attempt, how late, which occurrence. */
  readonly eventId?: string;
  readonly attempt?: number;
  readonly lateMs?: number;
  readonly occurrence?: number;
  readonly [member: string]: unknown;
}

/** `get` with `history: true`: the timer (null when unknown) and its history, oldest first. */
export interface TimerWithHistory {
  readonly timer: Timer | null;
  readonly history: readonly TimerHistoryEntry[];
}

export interface ScheduleInput extends CommandOptions {
  serviceCallId: string;
  /** A Date, or an ISO 8601 date-time with an offset. In the past: fires at once. */
  dueAt: Date | string;
  /** Any JSON value (at most 16384 bytes as JSON), echoed in the event. */
  data?: unknown;
  repeat?: Repeat;
  maxLatenessMs?: number;
  delivery?: Delivery;
  createdBy?: string;
  createdVia?: string;
}

/** A command as it was published (CONTRACT §2): the envelope, `payload.tenantId` included. */
export interface CommandEnvelope {
  readonly id: string;
  readonly type: string;
  readonly tenantId: string;
  readonly correlationId?: string;
  readonly timestampMs: number;
  readonly payload: Readonly<Record<string, unknown>>;
}

export interface SendResult {
  /** The envelope id of the command that was stored. */
  readonly commandId: string;
  /** True when the stream already held a command with this id (a re-send). */
  readonly duplicate: boolean;
  /** The envelope that was sent. */
  readonly command: CommandEnvelope;
  /** Where it was published, and the stream and sequence number that stored it (the publish ack). */
  readonly subject: string;
  readonly stream: string;
  readonly seq: number;
}

/** A timer as queries show it. */
export interface Timer {
  readonly tenantId: string;
  readonly serviceCallId: string;
  readonly state: TimerState;
  /** Null only for the record of a cancel of a key that was never scheduled. */
  readonly dueAt: string | null;
  readonly generation: number;
  readonly commandTimestampMs: number;
  readonly data?: unknown;
  readonly correlationId?: string;
  readonly reachedAt?: string;
  readonly repeat?: Record<string, unknown>;
  readonly occurrence?: number;
  readonly attempt?: number;
  readonly result?: string;
  readonly reason?: string;
  readonly firedAt?: string;
  readonly completedAt?: string;
  readonly durationMs?: number;
  readonly createdBy?: string;
  readonly createdVia?: string;
  readonly updatedAt?: string;
  readonly traceId?: string;
}

export interface ListQuery {
  state?: TimerState;
  serviceCallIdPrefix?: string;
  /** Inclusive. */
  dueAfter?: Date | string;
  /** Exclusive. */
  dueBefore?: Date | string;
  /** 1 … 1000, default 100. */
  limit?: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
  /** Further filters the service accepts (sent as they are). */
  [filter: string]: unknown;
}

export interface TimerPage {
  readonly timers: readonly Timer[];
  /** Null on the last page. */
  readonly nextCursor: string | null;
}

export interface TimerStats {
  readonly tenantId: string;
  readonly scheduled: number;
  readonly reached: number;
  readonly missed: number;
  readonly cancelled: number;
  readonly fired: number;
  readonly completed: number;
  readonly failed: number;
  readonly timedOut: number;
  readonly nextDueAt: string | null;
  readonly oldestOverdueAt: string | null;
  readonly avgDurationMs: number | null;
}

export interface DueTimeReachedPayload {
  readonly tenantId: string;
  readonly serviceCallId: string;
  readonly dueAt: string;
  readonly reachedAt: string;
  readonly data?: unknown;
  readonly generation: number;
  readonly lateMs: number;
  readonly occurrence?: number;
  readonly missedOccurrences?: number;
  readonly missedOccurrencesCapped?: true;
  readonly attempt?: number;
}

export interface DueTimeMissedPayload {
  readonly tenantId: string;
  readonly serviceCallId: string;
  readonly dueAt: string;
  readonly missedAt: string;
  readonly data?: unknown;
  readonly generation: number;
  readonly lateMs: number;
  readonly occurrence?: number;
}

interface EventBase {
  /** The envelope id; the same for a redelivery or a republish of one event. */
  readonly id: string;
  readonly tenantId: string;
  readonly correlationId?: string;
  readonly timestampMs: number;
  /** The NATS headers of the message (`Nats-Msg-Id`, `traceparent`, `tracestate`, …). */
  readonly headers: Readonly<Record<string, string>>;
  readonly subject: string;
  /** 1 on the first delivery to this consumer, more on a redelivery. */
  readonly deliveryCount: number;
}

/** The codes of CommandRejected, in the service's order of precedence (CONTRACT §2). */
export type RejectionCode =
  | "TOO_LARGE"
  | "INVALID_JSON"
  | "INVALID_ENVELOPE"
  | "UNKNOWN_TYPE"
  | "INVALID_FIELD"
  | "TENANT_MISMATCH"
  | "DUE_TOO_FAR"
  | "QUOTA_EXCEEDED"
  | "TIMER_FINAL";

/** Why a command was refused; `commandId` is the command's envelope id (`SendResult.commandId`). */
export interface CommandRejectedPayload {
  readonly code: RejectionCode;
  readonly reason: string;
  readonly subject: string;
  readonly commandId?: string;
  readonly serviceCallId?: string;
}

export type TimerEvent =
  | (EventBase & { readonly type: "DueTimeReached"; readonly payload: DueTimeReachedPayload })
  | (EventBase & { readonly type: "DueTimeMissed"; readonly payload: DueTimeMissedPayload })
  | (EventBase & { readonly type: "CommandRejected"; readonly payload: CommandRejectedPayload });

/** `due`: DueTimeReached, `missed`: DueTimeMissed, `rejected`: CommandRejected of the tenant's commands. */
export type EventKind = "due" | "missed" | "rejected";

export interface ConsumeOptions {
  /** The durable consumer's name: created on the events stream when missing, used as it is otherwise. */
  durable: string;
  /** Which events (default `["due", "missed"]`); add `"rejected"` to see the tenant's refused commands. */
  kinds?: readonly EventKind[];
  /** Where a new durable consumer starts: `"new"` (default) events from now on, or `"all"` the stream holds. */
  deliverPolicy?: "new" | "all";
  /** Redelivery delay after the handler throws: `nakDelayMs × 2^(deliveryCount−1)`, at most `maxNakDelayMs`. Defaults 1000 / 60000. */
  nakDelayMs?: number;
  maxNakDelayMs?: number;
  /** How long a handled event's id is remembered, so that a redelivered copy is acked without calling the handler again. Default 120000. */
  dedupeWindowMs?: number;
  /** How long the server waits for an ack before redelivering (default 30000); keep it above the handler's running time. */
  ackWaitMs?: number;
  /** Told about events that could not be read (not JSON): they are terminated, not handed to the handler. */
  onError?: (error: Error) => void;
}

export interface EventSubscription {
  /** Stops fetching, waits for the handler in progress, and ends. The durable consumer stays. */
  stop(): Promise<void>;
}
