/**
 * The database named by TIMER_DATABASE_URL cannot be used as configured: it or its role does not
 * exist, or the password is wrong. Waiting would not help, so the service ends with this message,
 * which names the redacted URL and what to do.
 */
export class DatabaseSetupError extends Error {
  override readonly name = "DatabaseSetupError";
  constructor(
    /** The server's SQLSTATE: 3D000, 28000 or 28P01. */
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
