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
  /** Each tenant's sequences: a round asks for up to a thousand tenants' `firstDue`, each reads its own. */
  private readonly byTenant = new Map<string, Set<number>>();

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
    for (const seq of this.byTenant.get(tenant) ?? []) {
      if (this.entries.get(seq)!.notBeforeMs <= nowMs && (first === undefined || seq < first)) first = seq;
    }
    return first;
  }

  /** Handed over and left in the stream: hand it over again at `notBeforeMs` at the earliest. */
  left(consumer: string, tenant: string, seq: number, notBeforeMs: number): void {
    const handovers = this.deliveryCount(seq);
    // Deleted first, so that the entry moves to the end of the eviction order.
    this.removed(seq);
    this.entries.set(seq, { consumer, tenant, handovers, notBeforeMs });
    const seqs = this.byTenant.get(tenant);
    if (seqs === undefined) this.byTenant.set(tenant, new Set([seq]));
    else seqs.add(seq);
    if (this.entries.size > MAX_ENTRIES) this.removed(this.entries.keys().next().value!);
  }

  /** Removed from the stream: nothing to remember. */
  removed(seq: number): void {
    const entry = this.entries.get(seq);
    if (entry === undefined) return;
    this.entries.delete(seq);
    const seqs = this.byTenant.get(entry.tenant)!;
    seqs.delete(seq);
    if (seqs.size === 0) this.byTenant.delete(entry.tenant);
  }

  /** The consumer delivered through `seq`: what the bypass left up to there is the consumer's now. */
  forgetThrough(consumer: string, seq: number): void {
    for (const [entrySeq, entry] of this.entries) if (entry.consumer === consumer && entrySeq <= seq) this.removed(entrySeq);
  }

  /** The stream was recreated: its sequence numbers mean other messages now. */
  clear(): void {
    this.entries.clear();
    this.byTenant.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
