/** The tests' one polling wait: for what has no event to await (a metric, a file, a status code). */

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export interface WaitOptions<T> {
  /** What is awaited, named in the error. */
  readonly what: string;
  readonly timeoutMs: number;
  /** Whether a probed value is the one awaited; default: any value but `undefined` and `false`. */
  readonly until?: (value: T) => boolean;
  /** Pause between probes; default 50 ms. */
  readonly everyMs?: number;
  /**
   * A probe that throws has not succeeded yet (an assertion that does not hold yet, a server not
   * yet listening); at the deadline the last error is thrown. Default: an error fails the wait.
   */
  readonly retryErrors?: boolean;
  /** Asked before each probe: a reason to fail at once (a child process died), else undefined. */
  readonly abortIf?: () => string | undefined;
}

const settled = (value: unknown): boolean => value !== undefined && value !== false;

/**
 * Probes until the value is the one awaited and returns it; fails after `timeoutMs` naming what was
 * awaited and the last observation. The short form `waitFor(probe, until, timeoutMs, what, everyMs)`
 * is the same with those options.
 */
export async function waitFor<T>(probe: () => Promise<T> | T, options: WaitOptions<T>): Promise<T>;
export async function waitFor<T>(
  probe: () => Promise<T> | T,
  until: (value: T) => boolean,
  timeoutMs: number,
  what: string,
  everyMs?: number,
): Promise<T>;
export async function waitFor<T>(
  probe: () => Promise<T> | T,
  optionsOrUntil: WaitOptions<T> | ((value: T) => boolean),
  timeoutMs?: number,
  what?: string,
  everyMs?: number,
): Promise<T> {
  const options: WaitOptions<T> =
    typeof optionsOrUntil === "function"
      ? { until: optionsOrUntil, timeoutMs: timeoutMs!, what: what!, ...(everyMs === undefined ? {} : { everyMs }) }
      : optionsOrUntil;
  const until = options.until ?? settled;
  const deadline = Date.now() + options.timeoutMs;
  let last: { value: T } | { error: unknown } | undefined;
  for (;;) {
    const abort = options.abortIf?.();
    if (abort !== undefined) throw new Error(`${options.what}: ${abort}`);
    try {
      const value = await probe();
      if (until(value)) return value;
      last = { value };
    } catch (error) {
      if (options.retryErrors !== true) throw error;
      last = { error };
    }
    if (Date.now() > deadline) {
      if (last !== undefined && "error" in last) throw last.error;
      const seen = last === undefined ? "" : `; last: ${JSON.stringify(last.value)}`;
      throw new Error(`${options.what}: not within ${options.timeoutMs} ms${seen}`);
    }
    await sleep(options.everyMs ?? 50);
  }
}

/** Polls `condition` until it holds; fails after `timeoutMs` naming `what`. */
export async function waitUntil(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string, everyMs = 50): Promise<void> {
  await waitFor(condition, { until: (held) => held, timeoutMs, what, everyMs });
}

/** Retries `check` (an assertion) until it passes and returns its value; after `timeoutMs` its last error fails the test. */
export function eventually<T>(check: () => Promise<T> | T, timeoutMs = 10_000): Promise<T> {
  return waitFor(check, { until: () => true, retryErrors: true, timeoutMs, what: "assertion" });
}
