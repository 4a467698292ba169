import { setImmediate } from "node:timers";

interface Waiting<T, R> {
  readonly input: T;
  readonly resolve: (result: R) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Runs the calls made within one turn of the event loop in as few runs as it can without delaying
 * a lone call: the first call of a turn runs at once, and the calls after it in the same turn wait
 * for the end of the turn and run together, each getting its own part of the result. A synchronous
 * store commits each run in one transaction, so calls that arrive together (the records of
 * pipelined polls, acked by the same socket read) share a commit and the pages they dirty, while a
 * single record at low load is not held back. When a run throws, every call of it fails with that error.
 */
export class TurnCoalescer<T, R> {
  #waiting: Waiting<T, R>[] = [];
  #ranThisTurn = false;

  /** `runAll` returns one result per input, in input order. */
  constructor(private readonly runAll: (inputs: readonly T[]) => R[]) {}

  run(input: T): Promise<R> {
    if (!this.#ranThisTurn) {
      this.#ranThisTurn = true;
      setImmediate(() => {
        this.#ranThisTurn = false;
        this.flush();
      });
      try {
        return Promise.resolve(this.runAll([input])[0]!);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return new Promise<R>((resolve, reject) => {
      this.#waiting.push({ input, resolve, reject });
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
