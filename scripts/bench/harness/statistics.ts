import { round } from "./log.js";

// Statistics

/** Nearest-rank percentile of unsorted numbers. */
export function percentile(values: readonly number[], q: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function summary(
  values: readonly number[],
): { p50: number; p90: number; p99: number; max: number; min: number; mean: number } | undefined {
  if (values.length === 0) return undefined;
  // reduce, not Math.min(...values): 600,000 recurring lags exceed the call stack as arguments.
  return {
    min: round(values.reduce((a, b) => (b < a ? b : a), Number.POSITIVE_INFINITY)),
    p50: round(percentile(values, 0.5)!),
    p90: round(percentile(values, 0.9)!),
    p99: round(percentile(values, 0.99)!),
    max: round(values.reduce((a, b) => (b > a ? b : a), Number.NEGATIVE_INFINITY)),
    mean: round(values.reduce((a, b) => a + b, 0) / values.length),
  };
}

/** A small deterministic PRNG (mulberry32): the same timer layout on every run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
