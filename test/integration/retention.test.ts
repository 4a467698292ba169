import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient } from "../support/timer-client.js";
import {
  barrier,
  commandsSeries,
  eventually,
  expectNeverFired,
  fromNow,
  metricValue,
  scrapeMetrics,
  uniqueId,
} from "./integration-support.js";
import { natsQuery } from "./query-support.js";

// 0.001 h = 3.6 s: final timers go 3.6 s after their last change; the sweep runs every second.
const RETENTION_MS = 3_600;

let nats: NatsServerProcess;
let service: TimerServiceProcess;
let client: TimerClient;

beforeAll(async () => {
  nats = await NatsServerProcess.start();
  service = await TimerServiceProcess.start(nats.url, { TIMER_POLLING_INTERVAL: "100", TIMER_RETENTION_HOURS: "0.001" });
  client = await TimerClient.connect(nats.url);
});

afterAll(async () => {
  await client?.close();
  await service?.dispose();
  await nats?.dispose();
});

const get = async (tenant: string, serviceCallId: string) =>
  (await natsQuery(client.connection, "get", tenant, { serviceCallId })).body.timer;

describe("retention (CONTRACT §7)", () => {
  it("when final timers are older than the window, then they are deleted and counted; Scheduled and newer ones stay", async () => {
    const tenant = uniqueId("ret");
    await client.schedule(tenant, "fired-old", fromNow(0));
    await client.schedule(tenant, "cancelled-old", fromNow(3_600_000));
    await client.cancel(tenant, "cancelled-old");
    await client.schedule(tenant, "waiting", fromNow(3_600_000));
    await client.waitForDue(tenant, "fired-old");
    await eventually(async () => expect((await get(tenant, "fired-old"))?.state).toBe("Reached"));
    const before = await metricValue(service, "timer_schedules_deleted_total");
    // A timer that fires later is newer than the others when they go.
    await new Promise((r) => setTimeout(r, 2_000));
    await client.schedule(tenant, "fired-new", fromNow(0));
    await client.waitForDue(tenant, "fired-new");
    await eventually(async () => {
      expect(await get(tenant, "fired-old")).toBeNull();
      expect(await get(tenant, "cancelled-old")).toBeNull();
    }, 15_000);
    expect((await get(tenant, "fired-new"))?.state).toBe("Reached");
    expect((await get(tenant, "waiting"))?.state).toBe("Scheduled");
    expect((await metricValue(service, "timer_schedules_deleted_total")) - before).toBeGreaterThanOrEqual(2);
  }, 40_000);

  it("when a command older than the window arrives after its timer was deleted, then it is ignored and nothing fires", async () => {
    const tenant = uniqueId("stale");
    const sentAt = Date.now();
    await client.schedule(tenant, "once", fromNow(0), { timestampMs: sentAt });
    await client.waitForDue(tenant, "once");
    await eventually(async () => expect(await get(tenant, "once")).toBeNull(), 15_000);
    const before = await scrapeMetrics(service);
    // Redelivered or delayed: the same key, sent before the deletion and older than the window.
    await client.schedule(tenant, "once", fromNow(0), { timestampMs: sentAt + 1 });
    await client.cancel(tenant, "other", { timestampMs: sentAt });
    await barrier(client);
    const after = await scrapeMetrics(service);
    const delta = (type: string) => (after.get(commandsSeries(type, "ignored")) ?? 0) - (before.get(commandsSeries(type, "ignored")) ?? 0);
    expect([delta("ScheduleTimer"), delta("CancelTimer")]).toEqual([1, 1]);
    expect(await get(tenant, "once")).toBeNull();
    expect(await get(tenant, "other")).toBeNull();
    expect(client.received("DueTimeReached", "once").filter((e) => e.body.tenantId === tenant)).toHaveLength(1);
    // A fresh command for the same key is applied as usual.
    await client.schedule(tenant, "once", fromNow(0));
    await client.waitFor(
      (e) =>
        e.body.type === "DueTimeReached" &&
        e.body.tenantId === tenant &&
        e.body.payload.serviceCallId === "once" &&
        e.body.payload.generation === 1 &&
        e.receivedAtMs > sentAt + RETENTION_MS,
    );
    expectNeverFired(client, tenant, "other");
  }, 40_000);
});
