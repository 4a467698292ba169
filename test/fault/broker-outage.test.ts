import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TimerClient } from "../support/timer-client.js";
import type { EventStreamReader } from "../support/event-stream-reader.js";
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
import { waitUntil } from "../support/wait-for.js";

/**
 * CONTRACT §3.9: the service survives the broker going away, reports not-ready meanwhile, reconnects
 * by itself and then fires every timer that fell due during the outage.
 */
describe("broker outage", () => {
  let harness: FaultHarness;

  beforeAll(async () => {
    harness = await startFaultHarness({ TIMER_POLLING_INTERVAL: "500" });
  });

  afterAll(() => harness?.dispose());

  it("when the broker is killed and restarted on its store, then /readyz is 503 meanwhile, 200 again by itself, and every timer due during or after the outage fires", async () => {
    const { nats, service, client, reader } = harness;
    const now = Date.now();
    const duringOutage = planTimers("during", 60, now, 2_000, 3_500);
    const afterOutage = planTimers("after", 20, now, 7_000, 8_000);
    const timers = [...duringOutage, ...afterOutage];
    await scheduleAll(client, timers);
    await waitUntilStored(client, service, timers.length);
    expect(Date.now()).toBeLessThan(duringOutage[0]!.dueAtMs);

    await nats.stop(true);
    await service.waitForReadyz(503, 5_000);
    const lastDueInOutage = duringOutage[duringOutage.length - 1]!.dueAtMs;
    await waitUntil(() => Date.now() > lastDueInOutage + 500, 10_000, "the outage outlasts the due times");
    await service.waitForReadyz(503, 1_000);
    const restartedAtMs = Date.now();
    await nats.restart();

    await service.waitForReadyz(200, 15_000);
    await reader.waitForTimers(
      TENANT,
      timers.map((t) => t.serviceCallId),
      20_000,
    );
    const newAfterRestart = await scheduleAfterReady(client, reader, "new-after-restart");
    console.info(
      `broker restart on its store: a timer scheduled once /readyz was 200 again fired after ${newAfterRestart} ms (due after 300 ms)`,
    );
    for (const timer of duringOutage) {
      expect(reader.eventsOf(TENANT, timer.serviceCallId)[0]!.storedAtMs).toBeGreaterThanOrEqual(restartedAtMs);
    }
    expect(earlyEvents(reader.events)).toEqual([]);
    expect(mismatchedEvents(reader.events, timers)).toEqual([]);
    expect(reader.duplicates).toBe(0);
  }, 90_000);

  it("when the broker comes back with an empty store, then the service recreates the streams and its consumer, becomes ready, and fires both stored and newly scheduled timers", async () => {
    const { nats, service, client, reader } = harness;
    const storedBefore = planTimers("stored", 10, Date.now(), 2_000, 3_000);
    await scheduleAll(client, storedBefore);
    await waitUntilStored(client, service, storedBefore.length);
    expect(Date.now()).toBeLessThan(storedBefore[0]!.dueAtMs);

    await nats.stop(true);
    for (const entry of readdirSync(nats.storeDir)) rmSync(join(nats.storeDir, entry), { recursive: true, force: true });
    await service.waitForReadyz(503, 5_000);
    const lastDueInOutage = storedBefore[storedBefore.length - 1]!.dueAtMs;
    await waitUntil(() => Date.now() > lastDueInOutage + 300, 10_000, "the outage outlasts the due times");
    await nats.restart();
    await service.waitForReadyz(200, 15_000);

    await reader.waitForTimers(
      TENANT,
      storedBefore.map((t) => t.serviceCallId),
      20_000,
    );
    const scheduledAfterMs = await scheduleAfterReady(client, reader, "fresh");
    console.info(
      `broker restart with an empty store: a timer scheduled once /readyz was 200 again fired after ${scheduledAfterMs} ms (due after 300 ms)`,
    );
    // The recreated consumer is pulled from at once, not after the old pull request expires (~15–45 s).
    expect(scheduledAfterMs).toBeLessThan(5_000);
    for (const timer of storedBefore) expect(reader.eventsOf(TENANT, timer.serviceCallId).at(-1)!.epoch).toBe(1);
    expect(reader.eventsOf(TENANT, "fresh")[0]!.epoch).toBe(1);
    expect(earlyEvents(reader.events)).toEqual([]);
    expect(mismatchedEvents(reader.events, storedBefore)).toEqual([]);
  }, 90_000);
});

/**
 * Schedules one timer due 300 ms ahead and returns how long it took to fire. The deadline is
 * generous; the empty-store case asserts the pull restarted at once, not after nats.js's pull
 * request expired.
 */
async function scheduleAfterReady(client: TimerClient, reader: EventStreamReader, serviceCallId: string): Promise<number> {
  const startedAtMs = Date.now();
  await scheduleAll(client, [{ serviceCallId, dueAtMs: startedAtMs + 300 }]);
  await reader.waitForTimers(TENANT, [serviceCallId], 55_000);
  return reader.eventsOf(TENANT, serviceCallId)[0]!.storedAtMs - startedAtMs;
}
