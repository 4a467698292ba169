import type { DueHistogram, DueHistogramQuery } from "./timer-queries.js";

/** A bucket number and how many timers the adapter counted in it. */
export interface BucketCount {
  readonly bucket: number;
  readonly count: number;
}

/**
 * Builds the histogram from what an adapter counted, each part read with `LIMIT cap + 1` so that
 * one more than the cap tells that the count stopped there.
 */
export function histogramOf(query: DueHistogramQuery, overdueRead: number, bucketCounts: readonly BucketCount[]): DueHistogram {
  const counts = new Array<number>(query.buckets).fill(0);
  let total = 0;
  let last = -1;
  for (const { bucket, count } of bucketCounts) {
    if (bucket < 0 || bucket >= query.buckets) continue;
    counts[bucket] = count;
    total += count;
    last = Math.max(last, bucket);
  }
  const capped = total > query.cap;
  // The extra entry read to detect the cap is the window's latest: it belongs to the last bucket.
  if (capped) counts[last]! -= 1;
  return { overdue: Math.min(overdueRead, query.cap), overdueCapped: overdueRead > query.cap, counts, capped };
}

/** Where the window ends (exclusive). */
export function windowEndOf(query: DueHistogramQuery): number {
  return query.fromMs + query.bucketMs * query.buckets;
}
