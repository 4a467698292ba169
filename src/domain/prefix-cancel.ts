/**
 * A recorded `CancelTimersByPrefix` (CONTRACT §10): every timer of `tenantId` whose serviceCallId
 * starts with `serviceCallIdPrefix` and whose commandTs is not newer than `commandTs` counts as
 * cancelled by a `CancelTimer` at `commandTs`, whether or not the background sweep has reached it.
 */
export interface PrefixCancel {
  readonly tenantId: string;
  readonly serviceCallIdPrefix: string;
  /** The largest timestampMs of the prefix cancels of this prefix. */
  readonly commandTs: number;
}

/**
 * The prefix cancels of every tenant, for looking up the ones that apply to a key: per tenant a
 * map from prefix to timestamp plus the set of prefix lengths in use, so a lookup costs one map
 * probe per distinct length, not one comparison per prefix.
 */
export class PrefixCancelIndex {
  readonly #tenants = new Map<string, { readonly byPrefix: Map<string, number>; readonly lengths: Set<number> }>();

  constructor(cancels: Iterable<PrefixCancel> = []) {
    for (const cancel of cancels) this.add(cancel);
  }

  /** Records a prefix cancel; an older timestamp than the one known for the prefix changes nothing. */
  add({ tenantId, serviceCallIdPrefix, commandTs }: PrefixCancel): void {
    let tenant = this.#tenants.get(tenantId);
    if (tenant === undefined) {
      tenant = { byPrefix: new Map(), lengths: new Set() };
      this.#tenants.set(tenantId, tenant);
    }
    const known = tenant.byPrefix.get(serviceCallIdPrefix);
    if (known === undefined || commandTs > known) tenant.byPrefix.set(serviceCallIdPrefix, commandTs);
    tenant.lengths.add(serviceCallIdPrefix.length);
  }

  /** The commandTs of the prefix cancel of exactly this prefix, if any. */
  get(tenantId: string, serviceCallIdPrefix: string): number | undefined {
    return this.#tenants.get(tenantId)?.byPrefix.get(serviceCallIdPrefix);
  }

  /** The newest timestamp of the prefix cancels that match the key, or null when none does. */
  latestFor(tenantId: string, serviceCallId: string): number | null {
    const tenant = this.#tenants.get(tenantId);
    if (tenant === undefined) return null;
    let latest: number | null = null;
    for (const length of tenant.lengths) {
      if (length > serviceCallId.length) continue;
      const ts = tenant.byPrefix.get(serviceCallId.slice(0, length));
      if (ts !== undefined && (latest === null || ts > latest)) latest = ts;
    }
    return latest;
  }

  get size(): number {
    let size = 0;
    for (const tenant of this.#tenants.values()) size += tenant.byPrefix.size;
    return size;
  }
}

/**
 * The least string that is greater (in code point order, as SQLite's BINARY and Postgres' "C"
 * collations sort UTF-8) than every string starting with `prefix`; null when there is none (the
 * prefix is all U+10FFFF). Keys with the prefix are exactly those in [prefix, bound).
 */
export function prefixUpperBound(prefix: string): string | null {
  const codePoints = [...prefix];
  while (codePoints.length > 0) {
    const last = codePoints.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) {
      const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
      return codePoints.join("") + String.fromCodePoint(next);
    }
  }
  return null;
}
