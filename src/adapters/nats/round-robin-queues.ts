/**
 * One FIFO queue per source, taken from in turns: a batch holds an equal share of every non-empty
 * queue (a queue with less leaves its share to the others), so a message waits for at most the
 * batch in progress, however long another queue is. Order within a queue is kept.
 */
export class RoundRobinQueues<T> {
  private readonly queues: T[][] = [];
  /** Where the next batch starts taking, so leftovers of an uneven share rotate. */
  private next = 0;
  private count = 0;

  get size(): number {
    return this.count;
  }

  push(source: number, item: T): void {
    (this.queues[source] ??= []).push(item);
    this.count++;
  }

  /** Up to `max` items, an equal share from each non-empty queue. */
  take(max: number): T[] {
    const taken: T[] = [];
    while (taken.length < max && this.count > 0) {
      const nonEmpty = this.queues.filter((queue) => queue.length > 0).length;
      const share = Math.max(1, Math.floor((max - taken.length) / nonEmpty));
      const n = this.queues.length;
      for (let i = 0; i < n && taken.length < max; i++) {
        const queue = this.queues[(this.next + i) % n];
        if (queue === undefined || queue.length === 0) continue;
        const part = queue.splice(0, Math.min(share, max - taken.length));
        this.count -= part.length;
        for (const item of part) taken.push(item);
      }
      this.next = (this.next + 1) % Math.max(1, n);
    }
    return taken;
  }
}
