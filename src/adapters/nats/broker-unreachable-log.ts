import type { Logger } from "../../app/logger.js";
import { redactUrl } from "../../config/broker-url.js";

/** At most one "unreachable" warn line per this interval, however fast the client retries. */
export const UNREACHABLE_LOG_INTERVAL_MS = 10_000;

/**
 * Counts the attempts to reach the broker during one outage (at start, or after a disconnect) and
 * logs a warn line with the redacted server URLs and the count: at once for the first one, then at
 * most once per interval, so a broker that stays away for hours does not flood the log.
 */
export class BrokerUnreachableLog {
  private attempts = 0;
  private lastLoggedAtMs: number | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly servers: readonly string[],
    private readonly now: () => number = Date.now,
    private readonly intervalMs = UNREACHABLE_LOG_INTERVAL_MS,
  ) {}

  /** A new outage whose start was already logged (the disconnect line): the next line waits. */
  outageLogged(): void {
    this.attempts = 0;
    this.lastLoggedAtMs = this.now();
  }

  /** One more attempt to reach the broker failed or is under way. */
  attempt(error?: unknown): void {
    this.attempts += 1;
    const now = this.now();
    if (this.lastLoggedAtMs !== undefined && now - this.lastLoggedAtMs < this.intervalMs) return;
    this.lastLoggedAtMs = now;
    this.logger.warn(
      {
        servers: this.servers.map(redactUrl),
        attempts: this.attempts,
        ...(error === undefined ? {} : { error: error instanceof Error ? error.message : String(error) }),
      },
      "NATS broker unreachable; still trying",
    );
  }

  /** The broker answered: returns how many attempts the outage took and starts counting afresh. */
  reached(): number {
    const attempts = this.attempts;
    this.attempts = 0;
    this.lastLoggedAtMs = undefined;
    return attempts;
  }
}
