import { nextTurn } from "../in-slices.js";

/**
 * Admission of queries (CONTRACT §12, docs/design/event-loop.md): queries share the event loop (and
 * on SQLite the connection) with firing and commands, so they run a few at a time, with a turn of
 * the event loop before each, taking tenants round-robin: one tenant's flood of queries waits in its
 * own queue while another tenant's query goes next. A tenant's queue is bounded; past it the query is
 * refused at once (the caller answers BUSY).
 */
export interface FairQueryGateLimits {
  /** Queries running at once, over all tenants. */
  readonly running: number;
  /** Queries of one tenant running at once. */
  readonly runningPerTenant: number;
  /** Queries of one tenant waiting; more are refused. */
  readonly waitingPerTenant: number;
}

export const DEFAULT_QUERY_LIMITS: FairQueryGateLimits = { running: 2, runningPerTenant: 1, waitingPerTenant: 32 };

export class FairQueryGate {
  readonly #waiting = new Map<string, (() => void)[]>();
  readonly #runningByTenant = new Map<string, number>();
  #running = 0;

  constructor(private readonly limits: FairQueryGateLimits = DEFAULT_QUERY_LIMITS) {}

  /** Runs `query` when its turn comes; undefined when the tenant's queue is full (nothing ran). */
  async run<T>(tenantId: string, query: () => Promise<T>): Promise<T | undefined> {
    const queue = this.#waiting.get(tenantId) ?? [];
    if (queue.length >= this.limits.waitingPerTenant) return undefined;
    await new Promise<void>((admit) => {
      queue.push(admit);
      this.#waiting.set(tenantId, queue);
      this.#dispatch();
    });
    // The loop's turn: timers due and commands received meanwhile go first.
    await nextTurn();
    try {
      return await query();
    } finally {
      this.#running--;
      const left = (this.#runningByTenant.get(tenantId) ?? 1) - 1;
      if (left === 0) this.#runningByTenant.delete(tenantId);
      else this.#runningByTenant.set(tenantId, left);
      this.#dispatch();
    }
  }

  /** Admits waiting queries while there is room, one tenant after another (Map order rotates). */
  #dispatch(): void {
    let admitted = true;
    while (this.#running < this.limits.running && admitted) {
      admitted = false;
      for (const [tenantId, queue] of this.#waiting) {
        if ((this.#runningByTenant.get(tenantId) ?? 0) >= this.limits.runningPerTenant) continue;
        const admit = queue.shift()!;
        // To the back of the rotation: the next admission starts with another tenant.
        this.#waiting.delete(tenantId);
        if (queue.length > 0) this.#waiting.set(tenantId, queue);
        this.#running++;
        this.#runningByTenant.set(tenantId, (this.#runningByTenant.get(tenantId) ?? 0) + 1);
        admit();
        admitted = true;
        break;
      }
    }
  }
}
