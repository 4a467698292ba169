import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient } from "../support/timer-client.js";
import { eventually, fromNow, uniqueId, UTC_MS } from "./integration-support.js";
import { httpGet, natsQuery } from "./query-support.js";

/*
 * A timer's own history (CONTRACT §19) through the running service: `get` with `history: true`
 * over NATS and `?history=true` over HTTP. Runs on SQLite, and on Postgres with TEST_TIMER_STORE=postgres.
 */

const TOKEN = "test-admin-token-8e2d41";
const FAR = 24 * 3_600_000;

let nats: NatsServerProcess;
let service: TimerServiceProcess;
let client: TimerClient;

beforeAll(async () => {
  nats = await NatsServerProcess.start();
  service = await TimerServiceProcess.start(nats.url, { TIMER_POLLING_INTERVAL: "100", TIMER_ADMIN_TOKEN: TOKEN });
  client = await TimerClient.connect(nats.url);
});

afterAll(async () => {
  await client?.close();
  await service?.dispose();
  await nats?.dispose();
});

const path = (tenant: string, serviceCallId: string, query = "?history=true") =>
  `/v1/tenants/${tenant}/timers/${encodeURIComponent(serviceCallId)}${query}`;

/** The history over NATS, once it has `count` entries; HTTP answers the same. */
async function historyOf(tenant: string, serviceCallId: string, count: number): Promise<any[]> {
  const body = await eventually(async () => {
    const { body } = await natsQuery(client.connection, "get", tenant, { serviceCallId, history: true });
    expect(body.history).toHaveLength(count);
    return body;
  });
  const viaHttp = await httpGet(service.baseUrl, path(tenant, serviceCallId), TOKEN);
  expect(viaHttp.status).toBe(200);
  expect(viaHttp.body).toEqual(body);
  return body.history;
}

describe("a timer's history over NATS and HTTP", () => {
  it("when a timer is scheduled, a stale cancel ignored and the timer fires, then get with history shows all three, oldest first", async () => {
    const tenant = uniqueId("h");
    const sent = Date.now();
    await client.schedule(tenant, "order-1", fromNow(2_000), { id: "sched-1", timestampMs: sent });
    await client.cancel(tenant, "order-1", { id: "cancel-old", timestampMs: sent - 1_000 });
    await client.waitForDue(tenant, "order-1");
    const history = await historyOf(tenant, "order-1", 3);
    expect(history[0]).toMatchObject({
      kind: "command",
      type: "ScheduleTimer",
      commandId: "sched-1",
      timestampMs: sent,
      outcome: "applied",
    });
    expect(history[0].at).toMatch(UTC_MS);
    expect(history[0].traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(history[1]).toMatchObject({
      kind: "command",
      type: "CancelTimer",
      commandId: "cancel-old",
      outcome: "ignored",
      reason: expect.stringContaining("older timestampMs"),
    });
    expect(history[2]).toMatchObject({ kind: "fired", attempt: 1, published: true });
    expect(history[2].eventId).toMatch(new RegExp(`^${tenant}:order-1:\\d+:1$`));
    expect(history[2].lateMs).toEqual(expect.any(Number));
  });

  it("when an operator cancels through the HTTP API, then the entry says a token was used", async () => {
    const tenant = uniqueId("h");
    await client.schedule(tenant, "later", fromNow(FAR), { id: "sched-2" });
    await historyOf(tenant, "later", 1);
    const response = await fetch(`${service.baseUrl}/v1/tenants/${tenant}/timers/later/cancel`, {
      method: "POST",
      headers: { Authorization: `Bearer ${TOKEN}` },
    });
    expect(response.status).toBe(202);
    const [, cancelled] = await historyOf(tenant, "later", 2);
    expect(cancelled).toMatchObject({ type: "CancelTimer", outcome: "applied", operator: { via: "http", token: true } });
  });

  it("when the timer is unknown, then the reply is timer null and no entries (HTTP 404)", async () => {
    const viaNats = await natsQuery(client.connection, "get", "acme", { serviceCallId: "never", history: true });
    expect(viaNats.body).toEqual({ timer: null, history: [] });
    const viaHttp = await httpGet(service.baseUrl, path("acme", "never"), TOKEN);
    expect(viaHttp.status).toBe(404);
    expect(viaHttp.body).toEqual({ timer: null, history: [] });
  });

  it("when get is asked without history, then the reply is { timer } as before", async () => {
    const tenant = uniqueId("h");
    await client.schedule(tenant, "plain", fromNow(FAR));
    await historyOf(tenant, "plain", 1);
    const { body } = await natsQuery(client.connection, "get", tenant, { serviceCallId: "plain" });
    expect(Object.keys(body)).toEqual(["timer"]);
    const viaHttp = await httpGet(service.baseUrl, path(tenant, "plain", ""), TOKEN);
    expect(Object.keys(viaHttp.body)).toEqual(["timer"]);
  });

  it("when history is not a boolean, then the request is refused", async () => {
    const viaNats = await natsQuery(client.connection, "get", "acme", { serviceCallId: "x", history: "yes" });
    expect(viaNats.errorCode).toBe("400");
    const viaHttp = await httpGet(service.baseUrl, path("acme", "x", "?history=yes"), TOKEN);
    expect(viaHttp.status).toBe(400);
    expect(viaHttp.body.error.code).toBe("INVALID_REQUEST");
  });
});
