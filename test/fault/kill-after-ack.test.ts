import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  TENANT,
  earlyEvents,
  mismatchedEvents,
  planTimers,
  scheduleAll,
  waitUntilStored,
  startFaultHarness,
  type FaultHarness,
} from "./fault-support.js";

/** CONTRACT §3.8: once a command is acked its effect survives kill -9 of the service. */
describe("kill -9 after the commands were acked", () => {
  let harness: FaultHarness;

  beforeAll(async () => {
    harness = await startFaultHarness({ TIMER_POLLING_INTERVAL: "1000" });
  });

  afterAll(() => harness?.dispose());

  it("when the service is killed with SIGKILL after acking 300 ScheduleTimer commands, then after a restart on the same database every timer fires, none early", async () => {
    const { service, client, reader } = harness;
    const timers = planTimers("acked", 300, Date.now(), 2_000, 4_000);
    await scheduleAll(client, timers);
    await waitUntilStored(client, service, timers.length);

    const firstDueAtMs = timers[0]!.dueAtMs;
    expect(Date.now(), "the kill must come before the first due time").toBeLessThan(firstDueAtMs);
    expect(reader.firedTimers).toBe(0);
    const killed = await service.kill("SIGKILL");
    expect(killed.signal).toBe("SIGKILL");

    await service.restart();
    await reader.waitForTimers(
      TENANT,
      timers.map((t) => t.serviceCallId),
      20_000,
    );

    expect(reader.firedTimers).toBe(timers.length);
    expect(earlyEvents(reader.events)).toEqual([]);
    expect(mismatchedEvents(reader.events, timers)).toEqual([]);
    expect(reader.duplicates).toBe(0);
  });
});
