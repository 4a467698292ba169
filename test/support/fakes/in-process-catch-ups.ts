import { decideFiring, type FiringDecision, type FiringTimer } from "../../../src/domain/firing-rules.js";
import type { RecurrenceCalendar } from "../../../src/domain/recurrence.js";
import type { CatchUpCalculator } from "../../../src/app/firing/catch-up-calculator.js";

/**
 * Long catch-ups decided by the same firing rule on the calling thread, a turn later: for tests that
 * drive polls by hand. The service runs them on a thread of their own (src/adapters/cron/catch-up-thread.ts).
 */
export class InProcessCatchUps implements CatchUpCalculator {
  constructor(private readonly calendar: RecurrenceCalendar) {}

  async decide(timer: FiringTimer, nowMs: number, prefixCancelTs: number | null): Promise<FiringDecision> {
    await Promise.resolve();
    return decideFiring(timer, nowMs, this.calendar, prefixCancelTs);
  }

  async close(): Promise<void> {}
}
