/** The event loop's next turn (after the I/O that is ready: broker messages, HTTP, a worker's answers). */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Maps `items`, giving the event loop a turn whenever a slice of work has taken `sliceMs`, so that
 * a long batch does not hold up what else the loop serves meanwhile.
 */
export async function mapInSlices<T, R>(items: readonly T[], sliceMs: number, map: (item: T, index: number) => R): Promise<R[]> {
  const results: R[] = [];
  let sliceStart = performance.now();
  for (let index = 0; index < items.length; index++) {
    results.push(map(items[index]!, index));
    if (performance.now() - sliceStart >= sliceMs) {
      await nextTurn();
      sliceStart = performance.now();
    }
  }
  return results;
}
