import { log, sleep } from "./log.js";

// Cleanup

type Disposer = () => unknown;

/** Things to undo, undone in reverse order. Closing twice is harmless. */
export class Scope {
  private static readonly open = new Set<Scope>();
  private readonly disposers: Disposer[] = [];

  constructor(readonly name: string) {
    Scope.open.add(this);
  }

  defer(disposer: Disposer): void {
    this.disposers.push(disposer);
  }

  async close(): Promise<void> {
    Scope.open.delete(this);
    while (this.disposers.length > 0) {
      const disposer = this.disposers.pop()!;
      try {
        await withTimeout(Promise.resolve().then(disposer), 15_000, `cleanup of ${this.name}`);
      } catch (error) {
        log(`cleanup in ${this.name} failed: ${String(error)}`);
      }
    }
  }

  /** Closes every scope still open (signal handler, fatal error). */
  static async closeAll(): Promise<void> {
    for (const scope of [...Scope.open].reverse()) await scope.close();
  }
}

export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${Math.round(ms / 1000)} s`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Polls `check` every `intervalMs` until it returns a value other than undefined/false; returns
 * that value and when it was seen. Throws after `timeoutMs`.
 */
export async function waitUntil<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  options: { timeoutMs: number; intervalMs?: number; what: string },
): Promise<{ value: T; atMs: number; perfMs: number }> {
  const deadline = performance.now() + options.timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return { value, atMs: Date.now(), perfMs: performance.now() };
    } catch (error) {
      lastError = error;
    }
    if (performance.now() > deadline) {
      throw new Error(
        `timed out after ${Math.round(options.timeoutMs / 1000)} s waiting for ${options.what}${lastError === undefined ? "" : ` (last error: ${String(lastError)})`}`,
      );
    }
    await sleep(options.intervalMs ?? 50);
  }
}
