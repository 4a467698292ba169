import { PeriodicLoop } from "../../app/periodic-loop.js";
import { systemClock } from "../clock/system-clock.js";
import { withDeadline } from "./storage-deadline.js";

export interface StorageProbeOptions {
  /** Time between the end of one check and the start of the next. */
  readonly intervalMs: number;
  /** A check that has not answered by then counts as failed. */
  readonly timeoutMs: number;
  /** Told each failed check's error, and the first success after failures. */
  readonly onResult?: (error: unknown) => void;
}

/**
 * Runs a cheap check of the store in the background (a row written and committed, a write lock taken and given
 * back), so that readiness follows a store that stopped answering even while nothing writes. At
 * most one check runs at a time; a check still open after `timeoutMs` is a failure.
 */
export class StorageProbe {
  readonly #checks: PeriodicLoop;
  #failing = false;
  #lastError: unknown;

  constructor(
    private readonly check: () => Promise<void> | void,
    private readonly options: StorageProbeOptions,
  ) {
    this.#checks = new PeriodicLoop(systemClock, options.intervalMs, () => this.#run(), { immediately: true });
  }

  /** True until a check fails, and again from the next check that succeeds. */
  get healthy(): boolean {
    return !this.#failing;
  }

  /** The error of the last failed check while failing, else undefined. */
  get lastError(): unknown {
    return this.#failing ? this.#lastError : undefined;
  }

  start(): void {
    this.#checks.start();
  }

  stop(): void {
    void this.#checks.stop();
  }

  async #run(): Promise<void> {
    try {
      await withDeadline(Promise.resolve().then(this.check), this.options.timeoutMs, "storage health check");
      if (this.#failing) this.options.onResult?.(undefined);
      this.#failing = false;
    } catch (error) {
      this.#failing = true;
      this.#lastError = error;
      this.options.onResult?.(error);
    }
  }
}
