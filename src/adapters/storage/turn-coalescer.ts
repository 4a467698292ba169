import { setImmediate } from "node:timers";

interface Waiting<T, R> {
  readonly input: T;
  readonly resolve: (result: R) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Runs the calls made within one turn of the event loop as one: the first call schedules a run at
 * the end of the turn, later ones join it, and each gets its own part of the result. A synchronous
 * store commits them in one transaction, so calls that arrive together (the records of pipelined
 * polls, acked by the same socket read) pay for one commit and share the pages they dirty.
 * When the run throws, every call of it fails with that error.
 */
export class TurnCoalescer<T, R> {
  #waiting: Waiting<T, R>[] = [];

  /** `runAll` returns one result per input, in input order. */
  constructor(private readonly runAll: (inputs: readonly T[]) => R[]) {}

  run(input: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      if (this.#waiting.push({ input, resolve, reject }) === 1) setImmediate(() => this.flush());
    });
  }

  /** Runs what is waiting now (also before the store closes). */
  flush(): void {
    const waiting = this.#waiting.splice(0);
    if (waiting.length === 0) return;
    let results: R[];
    try {
      results = this.runAll(waiting.map((w) => w.input));
    } catch (error) {
      for (const w of waiting) w.reject(error);
      return;
    }
    waiting.forEach((w, i) => w.resolve(results[i]!));
  }
}
