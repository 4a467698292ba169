/**
 * One FIFO queue per key (a tenant), taken from in turns: a batch holds an equal share of every
 * non-empty queue (a queue with less leaves its share to the others), so an item waits for at most
 * the batch in progress, however long another key's queue is. Order within a queue is kept.
 *
 * Only non-empty queues are kept, so memory follows the items held, not the keys ever seen; the
 * work of one `take` is bounded by `max` (every queue visited gives at least one item).
 */
export class RoundRobinQueues<T> {
  /** Non-empty queues in turn order: a queue that gave items and still has some moves to the back. */
  private readonly queues = new Map<string, T[]>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  push(key: string, item: T): void {
    const queue = this.queues.get(key);
    if (queue === undefined) this.queues.set(key, [item]);
    else queue.push(item);
    this.count++;
  }

  /** Up to `max` items, an equal share from each non-empty queue. */
  take(max: number): T[] {
    const taken: T[] = [];
    while (taken.length < max && this.count > 0) {
      const share = Math.max(1, Math.floor((max - taken.length) / this.queues.size));
      // One pass over the queues in turn, at most one per item still wanted; a queue re-inserted
      // at the back during it is not visited twice.
      const turn: Array<[string, T[]]> = [];
      for (const entry of this.queues) {
        if (turn.length >= max - taken.length) break;
        turn.push(entry);
      }
      for (const [key, queue] of turn) {
        const part = queue.splice(0, Math.min(share, max - taken.length));
        this.count -= part.length;
        for (const item of part) taken.push(item);
        this.queues.delete(key);
        if (queue.length > 0) this.queues.set(key, queue);
        if (taken.length >= max) break;
      }
    }
    return taken;
  }
}
