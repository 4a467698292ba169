import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerClient } from "../support/timer-client.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { uniqueId } from "./integration-support.js";
import { TEST_STORE } from "../support/test-postgres.js";

/**
 * CONTRACT §6: a SQLite instance leases its consumer in the broker, naming its database. A second
 * instance with another database neither consumes nor fires and says why; a restart on the same
 * database takes the lease back at once.
 */
describe.skipIf(TEST_STORE !== "sqlite")("SQLite consumer lease", () => {
  let nats: NatsServerProcess;
  let first: TimerServiceProcess;
  let second: TimerServiceProcess;
  let client: TimerClient;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    first = await TimerServiceProcess.start(nats.url, { TIMER_POLLING_INTERVAL: "200" });
    second = await TimerServiceProcess.start(nats.url, { TIMER_POLLING_INTERVAL: "200" }, { waitReady: false });
    client = await TimerClient.connect(nats.url);
  });

  afterAll(async () => {
    await client?.close();
    await second?.dispose();
    await first?.dispose();
    await nats?.dispose();
  });

  it("when a second instance with another database starts, then it stays not ready with lease false and says why", async () => {
    await second.waitForReadyz(503);
    const readyz = (await (await fetch(`${second.baseUrl}/readyz`)).json()) as { checks: Record<string, boolean> };

    expect(readyz.checks.lease).toBe(false);
    await expect
      .poll(() => second.logLines.some((line) => line.includes("another instance with another SQLite database")), { timeout: 10_000 })
      .toBe(true);
    const firstReadyz = (await (await fetch(`${first.baseUrl}/readyz`)).json()) as { checks: Record<string, boolean> };
    expect(firstReadyz.checks.lease).toBe(true);
  });

  it("when timers are scheduled, then only the lease holder consumes and fires them, once each", async () => {
    const tenantId = "lease";
    const ids = Array.from({ length: 20 }, () => uniqueId("t"));
    for (const id of ids) await client.schedule(tenantId, id, new Date(Date.now() + 300));

    for (const id of ids) await client.waitForDue(tenantId, id);
    await new Promise((r) => setTimeout(r, 500));

    expect(client.received("DueTimeReached").filter((e) => ids.includes(e.body.payload?.serviceCallId as string))).toHaveLength(20);
    expect(await first.metric('timer_commands_received_total{type="ScheduleTimer",outcome="accepted"}')).toBe(20);
    expect(await second.metric('timer_commands_received_total{type="ScheduleTimer",outcome="accepted"}')).toBe(0);
    expect(await second.metric("timer_schedules_processed_total")).toBe(0);
  });

  it("when the holder is killed and restarted on its own database, then it takes the lease back at once", async () => {
    await first.kill("SIGKILL");
    const restartedAt = Date.now();

    await first.restart({ waitReady: true });

    // Far below the lease's TTL (TIMER_CLAIM_TTL_MS, 30 s): the lease was taken back, not waited out.
    expect(Date.now() - restartedAt).toBeLessThan(15_000);
    const tenantId = "lease";
    const id = uniqueId("after-restart");
    await client.schedule(tenantId, id, new Date(Date.now() + 200));
    await client.waitForDue(tenantId, id);
    await second.waitForReadyz(503);
  });

  it("when the holder stops gracefully, then it gives the lease up and the waiting instance takes over", async () => {
    await first.kill("SIGTERM");

    await second.waitForReadyz(200, 20_000);
    const id = uniqueId("takeover");
    await client.schedule("lease", id, new Date(Date.now() + 200));
    await client.waitForDue("lease", id);
  });
});
