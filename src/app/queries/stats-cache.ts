import type { Clock } from "../clock.js";
import type { TimerCounts } from "./timer-queries.js";

/**
 * `stats` counts a tenant's index range, which grows with the tenant's timers. Answers are shared
 * for a short while and a count runs once per tenant at a time (single flight), so that a burst of
 * stats requests costs the store one count, not one each. An answer is at most `maxAgeMs` old.
 */
export class StatsCache {
  readonly #entries = new Map<string, { readonly atMs: number; readonly counts: Promise<TimerCounts> }>();

  constructor(
    private readonly clock: Clock,
    private readonly maxAgeMs: number,
    /** Tenants remembered at most; the oldest entry goes first. */
    private readonly maxTenants = 10_000,
  ) {}

  /**
   * Drops the tenant's shared answer (and a count still running, which may have started before the
   * change): the next request counts again. Called when a confirmed command of the tenant committed,
   * so that a `stats` asked after its `CommandOutcome` sees it (CONTRACT §19).
   */
  forget(tenantId: string): void {
    this.#entries.delete(tenantId);
  }

  get(tenantId: string, count: () => Promise<TimerCounts>): Promise<TimerCounts> {
    const nowMs = this.clock.now();
    const cached = this.#entries.get(tenantId);
    if (cached !== undefined && nowMs - cached.atMs <= this.maxAgeMs) return cached.counts;
    const counts = count();
    this.#entries.delete(tenantId);
    this.#entries.set(tenantId, { atMs: nowMs, counts });
    // A failed count is not shared: the next request counts again.
    counts.catch(() => {
      if (this.#entries.get(tenantId)?.counts === counts) this.#entries.delete(tenantId);
    });
    if (this.#entries.size > this.maxTenants) this.#entries.delete(this.#entries.keys().next().value!);
    return counts;
  }
}
