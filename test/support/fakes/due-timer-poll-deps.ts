import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";
import type { DueTimerPollDeps } from "../../../src/app/firing/due-timer-poll.js";
import { InProcessCatchUps } from "./in-process-catch-ups.js";

/**
 * DueTimerPoll's dependencies as the unit tests use them: batches of 100, owner "test", 30 s claims,
 * the cron calendar with long catch-ups decided in process; `given` replaces any of them.
 */
export function dueTimerPollDeps(
  given: Pick<DueTimerPollDeps, "store" | "publisher" | "clock" | "metrics" | "logger"> & Partial<DueTimerPollDeps>,
): DueTimerPollDeps {
  const calendar = given.calendar ?? new CronerCalendar();
  return { batchSize: 100, owner: "test", claimTtlMs: 30_000, calendar, catchUps: new InProcessCatchUps(calendar), ...given };
}
