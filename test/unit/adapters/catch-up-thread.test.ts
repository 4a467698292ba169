/** The catch-up thread (CatchUpCalculator): the firing rule itself, on a thread, bounded in time. */
import { afterEach, describe, expect, it } from "vitest";
import { CatchUpThread } from "../../../src/adapters/cron/catch-up-thread.js";
import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";
import { decideFiring, type FiringTimer } from "../../../src/domain/firing-rules.js";
import { firstOccurrenceAt } from "../../../src/domain/recurrence.js";

const calendar = new CronerCalendar();
const NOW = Date.parse("2026-11-28T08:00:00Z");

function recurring(cron: string, timezone: string, fromIso: string): FiringTimer {
  const rule = { cron, timezone, untilMs: null, maxOccurrences: null };
  const firstDueAtMs = firstOccurrenceAt(rule, Date.parse(fromIso), calendar)!;
  return {
    tenantId: "acme",
    serviceCallId: `${cron}@${timezone}`,
    dueAtMs: firstDueAtMs,
    generation: 1,
    occurrence: 1,
    repeat: { ...rule, firstDueAtMs },
    maxLatenessMs: null,
    commandTs: 1,
    reachedAtMs: null,
    delivery: null,
  };
}

describe("CatchUpThread", () => {
  let thread: CatchUpThread | undefined;

  afterEach(async () => {
    await thread?.close();
    thread = undefined;
  });

  it("when asked for catch-ups, then it answers each in order as the firing rule does on the main thread", async () => {
    thread = new CatchUpThread();
    const timers = [
      recurring("30 2 * * 0", "America/Santiago", "0001-01-01T00:00:00Z"),
      recurring("0 9 * * MON-FRI", "Europe/Berlin", "1902-01-01T00:00:00Z"),
    ];
    const decisions = await Promise.all(timers.map((timer) => thread!.decide(timer, NOW, null)));
    expect(decisions).toEqual(timers.map((timer) => decideFiring(timer, NOW, calendar, null)));
    expect(decisions[0]).toMatchObject({ kind: "reached", missedOccurrencesCapped: true });
  });

  it("when a catch-up takes longer than the time-out, then it fails and the next one is answered by a new thread", async () => {
    thread = new CatchUpThread(1);
    await expect(thread.decide(recurring("30 2 * * 0", "America/Santiago", "0001-01-01T00:00:00Z"), NOW, null)).rejects.toThrow(
      /longer than 1 ms/,
    );
    const patient = new CatchUpThread();
    try {
      const timer = recurring("15 1,2,3 * * 0", "Europe/Berlin", "2026-01-01T00:00:00Z");
      expect(await patient.decide(timer, NOW, null)).toEqual(decideFiring(timer, NOW, calendar, null));
    } finally {
      await patient.close();
    }
  });

  it("when closed, then every further request fails at once", async () => {
    thread = new CatchUpThread();
    await thread.close();
    await expect(thread.decide(recurring("* * * * *", "UTC", "2026-11-28T07:00:00Z"), NOW, null)).rejects.toThrow(/closed/);
  });
});
