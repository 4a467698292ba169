/**
 * Runs `work` on every item with at most `limit` calls in flight. Thousands of JetStream publishes
 * started at once wait for their acks in one queue, and on a loaded machine the last ones pass the
 * client's ack time-out; a bounded window keeps every publish well inside it.
 */
export async function eachInFlight<T>(
  items: readonly T[],
  limit: number,
  work: (item: T, index: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      await work(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
