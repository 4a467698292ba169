import type { Clock } from "./clock.js";
import { PollingLoop } from "./polling-loop.js";

/**
 * A task run every `periodMs` on the loop shape of the firing loops: one at a time (a slow run
 * delays the next, never overlaps it), stopped with `stop`, woken early with `wake`. The first run
 * comes after one period unless `immediately`, also after a restart. A run that throws is handed to
 * `onError` (by default thrown again outside the loop, as from a timer callback); the loop goes on.
 */
export class PeriodicLoop extends PollingLoop {
  readonly #periodMs: number;
  readonly #task: () => void | Promise<void>;
  readonly #onError: (error: unknown) => void;
  readonly #immediately: boolean;
  #waited = false;

  constructor(
    clock: Clock,
    periodMs: number,
    task: () => void | Promise<void>,
    options: { readonly immediately?: boolean; readonly holdsProcess?: boolean; readonly onError?: (error: unknown) => void } = {},
  ) {
    super(clock, periodMs, { holdsProcess: options.holdsProcess ?? false });
    this.#periodMs = periodMs;
    this.#task = task;
    // By default an error surfaces as a timer callback's would: an uncaught exception.
    this.#onError =
      options.onError ??
      ((error) =>
        queueMicrotask(() => {
          throw error;
        }));
    this.#immediately = options.immediately === true;
  }

  protected override beginRun(): void {
    this.#waited = this.#immediately;
  }

  protected async cycle(): Promise<number> {
    if (!this.#waited) {
      this.#waited = true;
      return this.#periodMs;
    }
    try {
      await this.#task();
    } catch (error) {
      this.#onError(error);
    }
    return this.#periodMs;
  }
}
