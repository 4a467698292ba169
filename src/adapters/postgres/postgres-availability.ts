import pg from "pg";
import type { Logger } from "../../app/logger.js";
import { doublingBackoffMs } from "../../app/doubling-backoff.js";
import { redactDatabaseUrl } from "../../config/database-url.js";
import { isConnectionFault } from "./connection-fault.js";
import { DatabaseSetupError } from "./database-setup-error.js";
import { UnreachableLog } from "../unreachable-log.js";

/** The first wait between two attempts; it doubles up to the cap. */
const FIRST_RETRY_MS = 250;
const RETRY_CAP_MS = 5_000;
/** At most one "unreachable" warn line per this interval, however many attempts fail. */
export const DATABASE_UNREACHABLE_LOG_INTERVAL_MS = 10_000;

/** What to do about each SQLSTATE that waiting would not clear. */
const SETUP_ADVICE: Readonly<Record<string, string>> = {
  "3D000": "create the database, or fix the database name in the URL",
  "28000": "create the role (CREATE ROLE … LOGIN) or allow it in pg_hba.conf, or fix the user in the URL",
  "28P01": "fix the password in the URL, or set the role's password",
};

export interface PostgresAvailabilityOptions {
  /** TIMER_DATABASE_URL; only its redacted form is logged. */
  readonly url: string;
  /** The longest one connection attempt may take (TIMER_DATABASE_TIMEOUT_MS). */
  readonly timeoutMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/**
 * Resolves once the database answers a connection, as the broker is waited for at start: a refused
 * or timed-out connection is logged (the URL redacted, at once and then at most once per interval)
 * and tried again. A database or role that does not exist, or a wrong password, throws a
 * DatabaseSetupError instead; any other error is thrown as it is.
 */
export async function waitUntilPostgresAnswers(options: PostgresAvailabilityOptions): Promise<void> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const database = redactDatabaseUrl(options.url);
  const unreachable = new UnreachableLog(
    options.logger,
    { database },
    "Postgres database unreachable; still trying (TIMER_DATABASE_URL)",
    now,
    DATABASE_UNREACHABLE_LOG_INTERVAL_MS,
  );
  for (;;) {
    const client = new pg.Client({ connectionString: options.url, connectionTimeoutMillis: options.timeoutMs });
    // A failed connect may also emit `error`; the rejected promise below reports it.
    client.on("error", () => undefined);
    try {
      await client.connect();
      await client.end();
      const attempts = unreachable.reached();
      if (attempts > 0) options.logger.info({ database, attempts }, "Postgres database reached");
      return;
    } catch (error) {
      await client.end().catch(() => undefined);
      const code = (error as { code?: unknown }).code;
      if (typeof code === "string" && code in SETUP_ADVICE) {
        throw new DatabaseSetupError(code, `TIMER_DATABASE_URL ${database}: ${(error as Error).message}; ${SETUP_ADVICE[code]}`);
      }
      if (!isConnectionFault(error)) throw error;
      unreachable.attempt(error);
      await sleep(doublingBackoffMs(unreachable.attempts, FIRST_RETRY_MS, RETRY_CAP_MS));
    }
  }
}
