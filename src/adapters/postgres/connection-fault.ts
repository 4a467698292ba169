import { StorageTimeoutError } from "../storage/storage-deadline.js";

const DRIVER_FAULT = /timeout|Connection terminated|connection error|not queryable/i;

/**
 * True for a failure that says the database did not answer (a time-out of ours or the driver's, a
 * lost or refused connection, a server shutting down or cancelling on statement_timeout), not that
 * it refused the work: such a fault clears as soon as the database answers again.
 */
export function isConnectionFault(error: unknown): boolean {
  if (error instanceof StorageTimeoutError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return true; // Node's ECONNREFUSED, ECONNRESET, EPIPE…
  if (typeof code !== "string" || !/^[0-9A-Z]{5}$/.test(code)) {
    // The driver's own time-outs and lost connections carry no code, only these messages.
    return error instanceof Error && DRIVER_FAULT.test(error.message);
  }
  // Class 08: connection exception; 57014: query_canceled (statement_timeout); 57P0x: shutdown.
  return code.startsWith("08") || code === "57014" || code.startsWith("57P");
}
