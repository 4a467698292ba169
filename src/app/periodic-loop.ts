import type { Clock } from "./clock.js";
import { PollingLoop } from "./polling-loop.js";

/**
 * A task run every `periodMs` on the loop shape of the firing loops: one at a time (a slow run
 * delays the next, never overlaps it), stopped with `stop`, woken early with `wake`. The first run
 * comes after one period unless `immediately`. A run that throws is handed to `onError`; the loop
 * goes on.
 */
export class PeriodicLoop extends PollingLoop {
  readonly #periodMs: number;
  readonly #task: () => void | Promise<void>;
  readonly #onError: (error: unknown) => void;
  #waited: boolean;

  constructor(
    clock: Clock,
    periodMs: number,
    task: () => void | Promise<void>,
    options: { readonly immediately?: boolean; readonly holdsProcess?: boolean; readonly onError?: (error: unknown) => void } = {},
  ) {
    super(clock, periodMs, { holdsProcess: options.holdsProcess ?? false });
    this.#periodMs = periodMs;
    this.#task = task;
    this.#onError = options.onError ?? (() => undefined);
    this.#waited = options.immediately === true;
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
