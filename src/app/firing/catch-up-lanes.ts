import { timerKeyString, type TimerKey } from "../../domain/timer.js";
import type { Logger } from "../logger.js";
import type { DueCursor, DueTimer, TenantDuePosition } from "../timer-store.js";

/** Past every due time: a poll takes nothing of a tenant whose lane is full. */
const TAKE_NOTHING: TenantDuePosition = { dueAtMs: Number.MAX_SAFE_INTEGER, serviceCallId: "" };

export interface CatchUpLanesOptions {
  /** Timers one lane holds; further timers of its tenant stay in the store until it has room. */
  readonly capacity: number;
  /** Fires a group of one tenant's timers, oldest due first, in order. */
  readonly fire: (timers: readonly DueTimer[]) => Promise<void>;
  /** A lane emptied: its tenant's later due timers can be polled again. */
  readonly onDrained: () => void;
  readonly logger: Logger;
}

/**
 * Per tenant, the due timers that wait for a long catch-up of that tenant (CONTRACT §10, §12): the
 * timer whose catch-up is long and every later due timer of its tenant go into the tenant's lane and
 * are fired there, in the tenant's order, a group at a time, while polls go on firing every other
 * tenant's timers. Polls skip what the lanes hold (`positions`), so a tenant's lane never holds a
 * timer twice and a full lane costs its tenant a wait, never a busy poll.
 */
export class CatchUpLanes {
  readonly #lanes = new Map<string, DueTimer[]>();
  readonly #held = new Set<string>();
  readonly #running = new Set<Promise<void>>();
  #stopping = false;

  constructor(private readonly options: CatchUpLanesOptions) {}

  /** Timers held by all lanes. */
  get size(): number {
    return this.#held.size;
  }

  holds(timer: TimerKey): boolean {
    return this.#held.size > 0 && this.#held.has(timerKeyString(timer));
  }

  busy(tenantId: string): boolean {
    return this.#lanes.has(tenantId);
  }

  /** Queues `timer` in its tenant's lane, opening one; false when the lane is full (or stopping). */
  add(timer: DueTimer): boolean {
    if (this.#stopping) return false;
    let lane = this.#lanes.get(timer.tenantId);
    if (lane === undefined) {
      lane = [];
      this.#lanes.set(timer.tenantId, lane);
      const running = this.#drain(timer.tenantId, lane);
      this.#running.add(running);
      void running.finally(() => this.#running.delete(running));
    } else if (lane.length >= this.options.capacity) {
      return false;
    }
    lane.push(timer);
    this.#held.add(timerKeyString(timer));
    return true;
  }

  /**
   * Where polls resume for the tenants with a lane: after its last timer, or nowhere while it is
   * full. Undefined when no lane is open.
   */
  positions(): DueCursor | undefined {
    if (this.#lanes.size === 0) return undefined;
    const positions = new Map<string, TenantDuePosition>();
    for (const [tenantId, lane] of this.#lanes) {
      const last = lane[lane.length - 1];
      positions.set(tenantId, lane.length >= this.options.capacity || last === undefined ? TAKE_NOTHING : last);
    }
    return positions;
  }

  /** Drops what the lanes have not started and waits for the groups in hand; the lanes then take timers again. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.allSettled([...this.#running]);
    this.#stopping = false;
  }

  async #drain(tenantId: string, lane: DueTimer[]): Promise<void> {
    // The rest of the poll that opened the lane joins its first group.
    await Promise.resolve();
    while (lane.length > 0 && !this.#stopping) {
      const group = lane.slice();
      try {
        await this.options.fire(group);
      } catch (error) {
        this.options.logger.error({ err: error, tenantId, timers: group.length }, "firing a tenant's catch-up failed; its timers stay due");
      }
      lane.splice(0, group.length);
      for (const timer of group) this.#held.delete(timerKeyString(timer));
    }
    for (const timer of lane) this.#held.delete(timerKeyString(timer));
    this.#lanes.delete(tenantId);
    this.options.onDrained();
  }
}
