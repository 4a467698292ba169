/** A client whose server went away says so, naming the server, rather than timing out. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../../../test/support/nats-server.js";
import { connectTimerClient, type TimerClient, TimerClientError } from "../src/index.js";

let nats: NatsServerProcess;
let timers: TimerClient;

beforeAll(async () => {
  nats = await NatsServerProcess.start();
  timers = await connectTimerClient({ servers: nats.url, tenantId: "down", timeoutMs: 2_000 });
});

afterAll(async () => {
  await timers?.close();
  await nats?.dispose();
});

describe("a client whose server is down", () => {
  it("when NATS stops, then schedule and get fail NOT_CONNECTED naming the server, with the problem in detail", async () => {
    const disconnected = (async () => {
      for await (const status of timers.connection.status()) if (status.type === "disconnect") return;
    })();
    await nats.stop();
    await disconnected;

    const error = await timers.schedule({ serviceCallId: "x", dueAt: "2030-01-01T00:00:00Z" }).then(
      () => undefined,
      (e: unknown) => e as TimerClientError,
    );
    expect(error).toBeInstanceOf(TimerClientError);
    expect(error!.code).toBe("NOT_CONNECTED");
    expect(error!.detail).toBe(`not connected to nats://127.0.0.1:${nats.port} (the connection was lost; reconnecting)`);
    expect(error!.message).toBe(`publishing ScheduleTimer: ${error!.detail}: the command was not sent`);
    expect(error!.message).not.toMatch(/TIMEOUT|timed out/);

    const query = await timers.get("x").then(
      () => undefined,
      (e: unknown) => e as TimerClientError,
    );
    expect([query!.code, query!.detail]).toEqual(["NOT_CONNECTED", error!.detail]);
  });
});
