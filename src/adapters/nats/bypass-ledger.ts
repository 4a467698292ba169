/** Entries kept at most; the oldest go first (their messages are then read again, which is harmless). */
const MAX_ENTRIES = 10_000;

interface Entry {
  readonly consumer: string;
  /** The source and tenant it belongs to (the bypass's read position key). */
  readonly tenant: string;
  readonly handovers: number;
  readonly notBeforeMs: number;
}

/**
 * What the backlog bypass remembers of the messages it handed over and did not remove from the
 * stream: when it may hand one over again (a nak's delay; never, when removing it failed — the
 * consumer gets it in its turn) and how often it did (the delivery count the processor's back-off
 * and report retries read). Memory is bounded: entries are forgotten once the source's consumer has
 * delivered past them, and beyond MAX_ENTRIES.
 */
export class BypassLedger {
  private readonly entries = new Map<number, Entry>();

  /** Whether the message at `seq` is to be left in the stream for now. */
  resting(seq: number, nowMs: number): boolean {
    const entry = this.entries.get(seq);
    return entry !== undefined && entry.notBeforeMs > nowMs;
  }

  /** The delivery count of the next handover of the message at `seq` (1 the first time). */
  deliveryCount(seq: number): number {
    return (this.entries.get(seq)?.handovers ?? 0) + 1;
  }

  /** The lowest sequence of `tenant`'s messages whose rest is over, if any: a read starts there again. */
  firstDue(tenant: string, nowMs: number): number | undefined {
    let first: number | undefined;
    if (this.entries.size === 0) return first;
    for (const [seq, entry] of this.entries) {
      if (entry.tenant === tenant && entry.notBeforeMs <= nowMs && (first === undefined || seq < first)) first = seq;
    }
    return first;
  }

  /** Handed over and left in the stream: hand it over again at `notBeforeMs` at the earliest. */
  left(consumer: string, tenant: string, seq: number, notBeforeMs: number): void {
    const handovers = this.deliveryCount(seq);
    this.entries.delete(seq);
    this.entries.set(seq, { consumer, tenant, handovers, notBeforeMs });
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
  }

  /** Removed from the stream: nothing to remember. */
  removed(seq: number): void {
    this.entries.delete(seq);
  }

  /** The consumer delivered through `seq`: what the bypass left up to there is the consumer's now. */
  forgetThrough(consumer: string, seq: number): void {
    for (const [entrySeq, entry] of this.entries) if (entry.consumer === consumer && entrySeq <= seq) this.entries.delete(entrySeq);
  }

  /** The stream was recreated: its sequence numbers mean other messages now. */
  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
