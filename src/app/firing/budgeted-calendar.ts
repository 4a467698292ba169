import type { RecurrenceCalendar } from "../../domain/recurrence.js";

/** A decision needed more calendar steps than the budget allows on the thread that serves everyone. */
export class CatchUpTooLong extends Error {
  override readonly name = "CatchUpTooLong";
}

/**
 * A calendar that answers at most `maxSteps` questions per decision and then throws `CatchUpTooLong`:
 * a firing decided within the budget costs at most that many steps of the event loop's time; one
 * that is not is handed to the catch-up calculator.
 */
export class BudgetedCalendar implements RecurrenceCalendar {
  #steps = 0;

  constructor(
    private readonly inner: RecurrenceCalendar,
    private readonly maxSteps: number,
  ) {}

  /** Starts the budget of one decision. */
  fresh(): this {
    this.#steps = 0;
    return this;
  }

  nextCronTime(cron: string, timezone: string, afterMs: number): number | null {
    if (++this.#steps > this.maxSteps) throw new CatchUpTooLong(`more than ${this.maxSteps} calendar steps`);
    return this.inner.nextCronTime(cron, timezone, afterMs);
  }

  problem(cron: string, timezone: string): ReturnType<RecurrenceCalendar["problem"]> {
    return this.inner.problem(cron, timezone);
  }
}
