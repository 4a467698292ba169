// Logging (stderr only: stdout carries the one JSON line)

const benchStartedAt = performance.now();

export function log(message: string): void {
  const elapsed = ((performance.now() - benchStartedAt) / 1000).toFixed(1).padStart(7);
  process.stderr.write(`[${elapsed}s] ${message}\n`);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** Rounds for the JSON output. */
export function round(value: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
