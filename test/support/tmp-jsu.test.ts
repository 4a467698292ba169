import { afterAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "./nats-server.js";
import { TimerServiceProcess } from "./timer-service-process.js";
import { TimerClient } from "./timer-client.js";

/**
 * A broker that answers but whose JetStream does not (still starting, not enabled, electing a
 * leader) must not stop the service: it waits, not ready, and becomes ready once JetStream answers.
 */
describe("JetStream not available at start", () => {
  let nats: NatsServerProcess | undefined;
  let service: TimerServiceProcess | undefined;
  let client: TimerClient | undefined;

  afterAll(async () => {
    await client?.close();
    await service?.dispose();
    await nats?.dispose();
  });

  it("when the broker runs without JetStream, then the service stays up and not ready, and becomes ready and fires timers once JetStream is on", async () => {
    nats = await NatsServerProcess.start([], { jetstream: false });
    service = await TimerServiceProcess.start(nats.url, { TIMER_POLLING_INTERVAL: "200" }, { waitReady: false });
    await service.waitForReadyz(503, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // several retry rounds of the topology
    expect((await fetch(`${service.baseUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${service.baseUrl}/readyz`)).status).toBe(503);
    expect(service.logs().some((line) => String(line.msg).includes("not available yet"))).toBe(true);

    await nats.stop();
    nats.jetstream = true;
    await nats.restart();
    const tR = Date.now(); try { await service.waitForReadyz(200, 40_000); } finally { console.log("ready after", Date.now() - tR, "\n" + service.logLines.filter((l) => !l.includes("lease")).map((l) => l.slice(0, 260)).join("\n")); }

    client = await TimerClient.connect(nats.url);
    await client.schedule("late-js", "after-js", new Date(Date.now() + 200));
    const event = await client.waitForDue("late-js", "after-js");
    expect(event.body.type).toBe("DueTimeReached");
  });
});
