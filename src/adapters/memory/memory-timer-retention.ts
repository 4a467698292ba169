import type { TimerRetention } from "../../app/retention/timer-retention.js";
import { FINAL_STATES } from "../../domain/retention.js";
import type { MemoryTimerStore } from "./memory-timer-store.js";

const FINAL: ReadonlySet<string> = new Set(FINAL_STATES);

/** Retention over a MemoryTimerStore (tests). The memory store keeps no prefix cancels. */
export class MemoryTimerRetention implements TimerRetention {
  constructor(private readonly store: MemoryTimerStore) {}

  async deleteFinalTimers(cutoffMs: number, limit: number): Promise<number> {
    const old = [...this.store.timers()]
      .filter((t) => FINAL.has(t.state) && t.updatedAtMs < cutoffMs)
      .sort((a, b) => a.updatedAtMs - b.updatedAtMs)
      .slice(0, limit);
    for (const timer of old) this.store.delete(timer);
    return old.length;
  }

  async deletePrefixCancels(): Promise<number> {
    return 0;
  }
}
