/** The tests' one polling wait: for what has no event to await (a metric, a file, a status code). */

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `condition` every `everyMs` until it holds; fails after `timeoutMs` naming `what` and the last observation. */
export async function waitFor<T>(
  probe: () => Promise<T> | T,
  condition: (value: T) => boolean,
  timeoutMs: number,
  what: string,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await probe();
    if (condition(last)) return last;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
    await sleep(everyMs);
  }
}
