import {
  ClosedConnectionError,
  DrainingConnectionError,
  NoRespondersError,
  PermissionViolationError,
  RequestError,
  TimeoutError,
} from "@nats-io/transport-node";

/**
 * What went wrong, as a stable code:
 * - `INVALID_INPUT`: refused locally before anything was sent (the message would not match its schema);
 * - `TIMEOUT`: no publish ack or reply in time (a command may still have been stored: re-sending it
 *   with the same `id` is safe, the stream drops the duplicate);
 * - `NO_RESPONDERS`: no stream captures the subject, or no service instance answers queries;
 * - `INVALID_REQUEST`: the service refused a query as malformed (400);
 * - `SERVICE_ERROR`: the service failed to answer a query (500, 503);
 * - `CLOSED`: the client or its connection is closed;
 * - `PERMISSION_DENIED`: the broker does not allow this subject for the connection's user;
 * - `NOT_CONNECTED`: the connection to the server is lost (the client is reconnecting);
 * - `NO_OUTCOME`: a command sent with `confirm: true` was stored but no outcome came in time (it may
 *   still be applied: look with `get`);
 * - `BROKER_ERROR`: any other failure of the broker or the connection.
 */
export type TimerClientErrorCode =
  | "INVALID_INPUT"
  | "TIMEOUT"
  | "NO_RESPONDERS"
  | "INVALID_REQUEST"
  | "SERVICE_ERROR"
  | "CLOSED"
  | "PERMISSION_DENIED"
  | "NOT_CONNECTED"
  | "NO_OUTCOME"
  | "BROKER_ERROR";

export interface TimerClientErrorOptions extends ErrorOptions {
  /** The service's error code of a refused query (400, 500, 503). */
  status?: number;
  /** The problem alone, without what was being done: `/payload/dueAt: must match …`, or the service's message; default the message. */
  detail?: string;
}

export class TimerClientError extends Error {
  override readonly name = "TimerClientError";
  readonly status: number | undefined;
  /** The problem alone, without what was being done (always set). */
  readonly detail: string;

  constructor(
    readonly code: TimerClientErrorCode,
    message: string,
    options: TimerClientErrorOptions = {},
  ) {
    const { status, detail, ...errorOptions } = options;
    super(message, errorOptions);
    this.status = status;
    this.detail = detail ?? message;
  }
}

/** The client's error for a failure of the NATS library, by the first known error of its cause chain. */
export function fromNatsError(error: unknown, doing: string): TimerClientError {
  if (error instanceof TimerClientError) return error;
  const failure = (code: TimerClientErrorCode, detail: string): TimerClientError =>
    new TimerClientError(code, `${doing}: ${detail}`, { cause: error, detail });
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof TimeoutError || /timeout/i.test(e.name)) return failure("TIMEOUT", "timed out");
    if (e instanceof NoRespondersError || (e instanceof RequestError && e.isNoResponders()) || /no responders/i.test(e.message)) {
      return failure("NO_RESPONDERS", "no responders");
    }
    if (e instanceof ClosedConnectionError || e instanceof DrainingConnectionError) return failure("CLOSED", "the connection is closed");
    if (e instanceof PermissionViolationError) return failure("PERMISSION_DENIED", e.message);
  }
  return failure("BROKER_ERROR", error instanceof Error ? error.message : String(error));
}

/**
 * The service refused a command sent with `confirm: true` (its `CommandOutcome` said `rejected`):
 * `code` is the CommandRejected code (`INVALID_FIELD`, `TIMER_FINAL`, …), `reason` the service's words.
 */
export class TimerRejectedError extends Error {
  override readonly name = "TimerRejectedError";
  /** The reason alone, as `TimerClientError.detail`. */
  readonly detail: string;

  constructor(
    readonly code: string,
    readonly reason: string,
    readonly commandId: string,
    readonly serviceCallId?: string,
  ) {
    super(`the service rejected command ${commandId}${serviceCallId === undefined ? "" : ` (${serviceCallId})`}: ${code}: ${reason}`);
    this.detail = reason;
  }
}
