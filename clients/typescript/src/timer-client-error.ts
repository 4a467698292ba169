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
 * - `BROKER_ERROR`: any other failure of the broker or the connection.
 */
export type TimerClientErrorCode =
  "INVALID_INPUT" | "TIMEOUT" | "NO_RESPONDERS" | "INVALID_REQUEST" | "SERVICE_ERROR" | "CLOSED" | "PERMISSION_DENIED" | "BROKER_ERROR";

export interface TimerClientErrorOptions extends ErrorOptions {
  /** The service's error code of a refused query (400, 500, 503). */
  status?: number;
  /** The problem alone, without what was being done: `/payload/dueAt: must match …`, or the service's message. */
  detail?: string;
}

export class TimerClientError extends Error {
  override readonly name = "TimerClientError";
  readonly status: number | undefined;
  readonly detail: string | undefined;

  constructor(
    readonly code: TimerClientErrorCode,
    message: string,
    options: TimerClientErrorOptions = {},
  ) {
    const { status, detail, ...errorOptions } = options;
    super(message, errorOptions);
    this.status = status;
    this.detail = detail;
  }
}

/** The client's error for a failure of the NATS library, by the first known error of its cause chain. */
export function fromNatsError(error: unknown, doing: string): TimerClientError {
  if (error instanceof TimerClientError) return error;
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof TimeoutError || /timeout/i.test(e.name))
      return new TimerClientError("TIMEOUT", `${doing}: timed out`, { cause: error });
    if (e instanceof NoRespondersError || (e instanceof RequestError && e.isNoResponders()) || /no responders/i.test(e.message)) {
      return new TimerClientError("NO_RESPONDERS", `${doing}: no responders`, { cause: error });
    }
    if (e instanceof ClosedConnectionError || e instanceof DrainingConnectionError) {
      return new TimerClientError("CLOSED", `${doing}: the connection is closed`, { cause: error });
    }
    if (e instanceof PermissionViolationError) return new TimerClientError("PERMISSION_DENIED", `${doing}: ${e.message}`, { cause: error });
  }
  return new TimerClientError("BROKER_ERROR", `${doing}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
}
