import type { Logger } from "../app/logger.js";

/**
 * Counts the attempts to reach a server during one outage (at start, or after a disconnect) and
 * logs a warn line with `fields` (what is unreachable, with its secrets redacted) and the count: at
 * once for the first attempt, then at most once per `intervalMs`, so a server that stays away for
 * hours does not flood the log.
 */
export class UnreachableLog {
  #attempts = 0;
  private lastLoggedAtMs: number | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly fields: Readonly<Record<string, unknown>>,
    private readonly message: string,
    private readonly now: () => number,
    private readonly intervalMs: number,
  ) {}

  /** The attempts of the outage so far. */
  get attempts(): number {
    return this.#attempts;
  }

  /** A new outage whose start was already logged (a disconnect line): the next line waits. */
  outageLogged(): void {
    this.#attempts = 0;
    this.lastLoggedAtMs = this.now();
  }

  /** One more attempt failed or is under way. */
  attempt(error?: unknown): void {
    this.#attempts += 1;
    const now = this.now();
    if (this.lastLoggedAtMs !== undefined && now - this.lastLoggedAtMs < this.intervalMs) return;
    this.lastLoggedAtMs = now;
    this.logger.warn(
      {
        ...this.fields,
        attempts: this.#attempts,
        ...(error === undefined ? {} : { error: error instanceof Error ? error.message : String(error) }),
      },
      this.message,
    );
  }

  /** The server answered: returns how many attempts the outage took and starts counting afresh. */
  reached(): number {
    const attempts = this.#attempts;
    this.#attempts = 0;
    this.lastLoggedAtMs = undefined;
    return attempts;
  }
}
