import { type TimerServiceProcess } from "../../../test/support/timer-service-process.js";
import { withTimeout } from "./scope.js";
import { parseMetrics } from "../../../test/support/prometheus-metrics.js";

// Prometheus

export type Scrape = Map<string, number>;

/** Every sample of the service's /metrics, keyed `name{label="value",…}` with the labels sorted. */
export async function scrape(service: TimerServiceProcess): Promise<Scrape> {
  const response = await withTimeout(fetch(`${service.baseUrl}/metrics`), 10_000, "GET /metrics");
  return parseMetrics(await response.text());
}

/** Sum over all series of one metric name (any labels). */
export function metricSum(scrape: Scrape, name: string): number {
  let sum = 0;
  for (const [key, value] of scrape) if (key === name || key.startsWith(`${name}{`)) sum += value;
  return sum;
}

export interface Histogram {
  /** Cumulative counts by upper bound, ascending, +Inf last. */
  readonly buckets: readonly { le: number; count: number }[];
  readonly sum: number;
  readonly count: number;
}

export function histogramOf(scrape: Scrape, name: string): Histogram {
  const buckets: { le: number; count: number }[] = [];
  for (const [key, value] of scrape) {
    if (!key.startsWith(`${name}_bucket{`)) continue;
    const le = /le="([^"]+)"/.exec(key)?.[1];
    if (le === undefined) continue;
    buckets.push({ le: le === "+Inf" ? Infinity : Number(le), count: value });
  }
  buckets.sort((a, b) => a.le - b.le);
  return { buckets, sum: scrape.get(`${name}_sum`) ?? 0, count: scrape.get(`${name}_count`) ?? 0 };
}

/** The observations between two scrapes. */
export function histogramDelta(before: Histogram, after: Histogram): Histogram {
  return {
    buckets: after.buckets.map((b) => ({ le: b.le, count: b.count - (before.buckets.find((x) => x.le === b.le)?.count ?? 0) })),
    sum: after.sum - before.sum,
    count: after.count - before.count,
  };
}

/**
 * Quantile by linear interpolation inside the bucket (as Prometheus' histogram_quantile), plus
 * the bucket it falls in, since the interpolation is only as good as the bucket layout.
 */
export function histogramQuantile(h: Histogram, q: number): { value: number; bucketLow: number; bucketHigh: number } | undefined {
  if (h.count <= 0) return undefined;
  const rank = q * h.count;
  let previousLe = 0;
  let previousCount = 0;
  for (const bucket of h.buckets) {
    if (bucket.count >= rank) {
      if (bucket.le === Infinity) return { value: previousLe, bucketLow: previousLe, bucketHigh: Infinity };
      const inBucket = bucket.count - previousCount;
      const value = inBucket <= 0 ? bucket.le : previousLe + ((bucket.le - previousLe) * (rank - previousCount)) / inBucket;
      return { value, bucketLow: previousLe, bucketHigh: bucket.le };
    }
    previousLe = bucket.le;
    previousCount = bucket.count;
  }
  return undefined;
}

/** Fraction of observations ≤ x (interpolated inside its bucket). */
export function histogramFractionBelow(h: Histogram, x: number): number | undefined {
  if (h.count <= 0) return undefined;
  let previousLe = 0;
  let previousCount = 0;
  for (const bucket of h.buckets) {
    if (x <= bucket.le) {
      const within = bucket.le === Infinity ? 0 : ((x - previousLe) / (bucket.le - previousLe)) * (bucket.count - previousCount);
      return (previousCount + within) / h.count;
    }
    previousLe = bucket.le;
    previousCount = bucket.count;
  }
  return 1;
}
