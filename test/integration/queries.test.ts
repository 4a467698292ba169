import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient } from "../support/timer-client.js";
import { eventually, fromNow, scrapeMetrics, series, uniqueId, UTC_MS } from "./integration-support.js";
import { eachInFlight } from "../support/in-flight.js";
import { httpGet, natsQuery } from "./query-support.js";
import { expectSchemaValid } from "../support/message-schemas.js";

const TOKEN = "test-admin-token-5c1f9e";
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

const nc = () => client.connection;
const http = (path: string, token: string | undefined = TOKEN) => httpGet(service.baseUrl, path, token);

const REPLY_SCHEMA = { get: "GetTimerReply", list: "ListTimersReply", stats: "TimerStatsReply" } as const;

/** Both transports give the same answer, valid for its published schema; the HTTP status is returned with it. */
async function both(endpoint: "get" | "list" | "stats", tenant: string, request: Record<string, string | number>, path: string) {
  const viaNats = await natsQuery(nc(), endpoint, tenant, request);
  const viaHttp = await http(path);
  expect(viaHttp.body).toEqual(viaNats.body);
  expectSchemaValid(viaNats.body, viaNats.errorCode === undefined ? REPLY_SCHEMA[endpoint] : "QueryError");
  return { body: viaNats.body, status: viaHttp.status, errorCode: viaNats.errorCode };
}

async function waitApplied(tenant: string, serviceCallId: string, state: string): Promise<any> {
  return eventually(async () => {
    const { body } = await natsQuery(nc(), "get", tenant, { serviceCallId });
    expect(body.timer?.state).toBe(state);
    return body.timer;
  });
}

describe("queries over NATS and HTTP", () => {
  it("when a timer is scheduled, then get finds it over both, with §9's fields", async () => {
    const tenant = uniqueId("t");
    await client.schedule(tenant, "call/1 ü", fromNow(FAR), { data: { order: 42 }, correlationId: "corr-1" });
    await waitApplied(tenant, "call/1 ü", "Scheduled");
    const { body, status } = await both(
      "get",
      tenant,
      { serviceCallId: "call/1 ü" },
      `/v1/tenants/${tenant}/timers/${encodeURIComponent("call/1 ü")}`,
    );
    expect(status).toBe(200);
    expect(body.timer).toMatchObject({
      tenantId: tenant,
      serviceCallId: "call/1 ü",
      state: "Scheduled",
      generation: 1,
      data: { order: 42 },
      correlationId: "corr-1",
    });
    expect(body.timer.dueAt).toMatch(UTC_MS);
    expect(typeof body.timer.commandTimestampMs).toBe("number");
    expect(body.timer).not.toHaveProperty("reachedAt");
  });

  it("when the timer is unknown, then get answers timer null (HTTP 404)", async () => {
    const { body, status, errorCode } = await both(
      "get",
      "acme",
      { serviceCallId: "never-scheduled" },
      "/v1/tenants/acme/timers/never-scheduled",
    );
    expect(body).toEqual({ timer: null });
    expect(status).toBe(404);
    expect(errorCode).toBeUndefined();
  });

  it("when timers are Scheduled, Reached and Cancelled, then get, list by state and stats show each", async () => {
    const tenant = uniqueId("states");
    await client.schedule(tenant, "waiting", fromNow(FAR));
    await client.schedule(tenant, "fires", fromNow(0));
    await client.schedule(tenant, "stopped", fromNow(FAR));
    await client.cancel(tenant, "stopped");
    await client.waitForDue(tenant, "fires");
    const reached = await waitApplied(tenant, "fires", "Reached");
    expect(reached.reachedAt).toMatch(UTC_MS);
    await waitApplied(tenant, "stopped", "Cancelled");
    for (const [state, id] of [
      ["Scheduled", "waiting"],
      ["Reached", "fires"],
      ["Cancelled", "stopped"],
    ] as const) {
      const { body, status } = await both("list", tenant, { state }, `/v1/tenants/${tenant}/timers?state=${state}`);
      expect(status).toBe(200);
      expect(body.timers.map((t: any) => t.serviceCallId)).toEqual([id]);
      expect(body.nextCursor).toBeNull();
    }
    for (const state of ["Missed", "Fired", "Completed", "Failed", "TimedOut"]) {
      const { body } = await both("list", tenant, { state }, `/v1/tenants/${tenant}/timers?state=${state}`);
      expect(body.timers).toEqual([]);
    }
    const { body: stats } = await both("stats", tenant, {}, `/v1/tenants/${tenant}/stats`);
    expect(stats).toMatchObject({
      tenantId: tenant,
      scheduled: 1,
      reached: 1,
      cancelled: 1,
      missed: 0,
      fired: 0,
      completed: 0,
      failed: 0,
      timedOut: 0,
      oldestOverdueAt: null,
    });
    expect(stats.nextDueAt).toMatch(UTC_MS);
    const { body: tenants } = await http("/v1/tenants");
    expect(tenants.tenants).toContain(tenant);
  });

  it("when paging through 2,500 timers while timers change between pages, then neither transport lists one twice or misses an unchanged one", async () => {
    const tenant = uniqueId("paging");
    const base = Date.now() + FAR;
    const ids = Array.from({ length: 2_500 }, (_, i) => `p-${String(i).padStart(4, "0")}`);
    await eachInFlight(ids, 100, (id, i) => client.schedule(tenant, id, new Date(base + Math.floor(i / 5) * 1_000)));
    await eventually(async () => expect((await natsQuery(nc(), "stats", tenant)).body.scheduled).toBe(2_500), 30_000);

    for (const transport of ["nats", "http"] as const) {
      const changed = new Set<string>();
      const listed: string[] = [];
      let cursor: string | null = null;
      let page = 0;
      do {
        const request: Record<string, string | number> = { state: "Scheduled", limit: 100, ...(cursor === null ? {} : { cursor }) };
        const body: any =
          transport === "nats"
            ? (await natsQuery(nc(), "list", tenant, request)).body
            : (
                await http(
                  `/v1/tenants/${tenant}/timers?${new URLSearchParams(Object.entries(request).map(([k, v]): [string, string] => [k, String(v)]))}`,
                )
              ).body;
        listed.push(...body.timers.map((t: any) => t.serviceCallId));
        cursor = body.nextCursor;
        page++;
        // Between pages: move a listed timer to the end, one ahead to the front, cancel one ahead. A
        // page may come back short (the scan skips rows changed since the first page), so the listing
        // can take more pages than the timers fill; past the last timer there is nothing to change.
        const seen = ids[page * 100 - 30];
        if (seen === undefined) continue;
        const ahead = ids[page * 100 + 40];
        const gone = ids[page * 100 + 60];
        changed.add(seen);
        await client.schedule(tenant, seen, new Date(base + 10 * FAR + page));
        if (ahead !== undefined) {
          changed.add(ahead);
          await client.schedule(tenant, ahead, new Date(base - 1_000));
        }
        if (gone !== undefined) {
          changed.add(gone);
          await client.cancel(tenant, gone);
        }
        await waitApplied(tenant, seen, "Scheduled").then(() =>
          eventually(async () =>
            expect((await natsQuery(nc(), "get", tenant, { serviceCallId: seen })).body.timer.dueAt).toBe(
              new Date(base + 10 * FAR + page).toISOString(),
            ),
          ),
        );
      } while (cursor !== null);
      expect(new Set(listed).size, `${transport}: duplicates`).toBe(listed.length);
      const unchanged = ids.filter((id) => !changed.has(id));
      expect(
        listed.filter((id) => !changed.has(id)),
        `${transport}: gaps`,
      ).toEqual(unchanged);
      expect(page).toBeGreaterThanOrEqual(20);
    }
  }, 180_000);

  it("when list is filtered by prefix and due range, then only those timers come back, in order", async () => {
    const tenant = uniqueId("filters");
    const base = Date.now() + FAR;
    await client.schedule(tenant, "order-2", new Date(base + 2_000));
    await client.schedule(tenant, "order-1", new Date(base + 3_000));
    await client.schedule(tenant, "invoice-1", new Date(base + 1_000));
    await client.schedule(tenant, "order-3", new Date(base + 9_000));
    await waitApplied(tenant, "order-3", "Scheduled");
    const dueAfter = new Date(base + 2_000).toISOString();
    const dueBefore = new Date(base + 9_000).toISOString();
    const { body } = await both(
      "list",
      tenant,
      { serviceCallIdPrefix: "order-", dueAfter, dueBefore },
      `/v1/tenants/${tenant}/timers?serviceCallIdPrefix=order-&dueAfter=${encodeURIComponent(dueAfter)}&dueBefore=${encodeURIComponent(dueBefore)}`,
    );
    expect(body.timers.map((t: any) => t.serviceCallId)).toEqual(["order-2", "order-1"]);
  });

  describe("malformed requests", () => {
    const cases: [string, "get" | "list" | "stats", string, unknown, string][] = [
      ["get without serviceCallId", "get", "acme", {}, "/v1/tenants/acme/timers/"],
      ["serviceCallId with a control character", "get", "acme", { serviceCallId: "a\u0001b" }, "/v1/tenants/acme/timers/a%01b"],
      ["an unknown state", "list", "acme", { state: "Sleeping" }, "/v1/tenants/acme/timers?state=Sleeping"],
      ["limit 0", "list", "acme", { limit: 0 }, "/v1/tenants/acme/timers?limit=0"],
      ["limit 1001", "list", "acme", { limit: 1001 }, "/v1/tenants/acme/timers?limit=1001"],
      ["limit not a number", "list", "acme", { limit: "ten" }, "/v1/tenants/acme/timers?limit=ten"],
      ["limit not an integer", "list", "acme", { limit: 2.5 }, "/v1/tenants/acme/timers?limit=2.5"],
      [
        "dueAfter without an offset",
        "list",
        "acme",
        { dueAfter: "2026-01-01T00:00:00" },
        "/v1/tenants/acme/timers?dueAfter=2026-01-01T00:00:00",
      ],
      ["dueBefore not a date", "list", "acme", { dueBefore: "tomorrow" }, "/v1/tenants/acme/timers?dueBefore=tomorrow"],
      ["a forged cursor", "list", "acme", { cursor: "bm90LWEtY3Vyc29y" }, "/v1/tenants/acme/timers?cursor=bm90LWEtY3Vyc29y"],
      ["an empty prefix", "list", "acme", { serviceCallIdPrefix: "" }, "/v1/tenants/acme/timers?serviceCallIdPrefix="],
      ["an unknown member", "list", "acme", { stat: "Scheduled" }, "/v1/tenants/acme/timers?stat=Scheduled"],
      ["a member to stats", "stats", "acme", { verbose: true }, "/v1/tenants/acme/stats?verbose=true"],
      ["the reserved tenant _unknown", "stats", "_unknown", {}, "/v1/tenants/_unknown/stats"],
      ["a tenant too long", "stats", "a".repeat(65), {}, `/v1/tenants/${"a".repeat(65)}/stats`],
    ];
    for (const [what, endpoint, tenant, request, path] of cases) {
      it(`when a request has ${what}, then NATS and HTTP answer 400 INVALID_REQUEST`, async () => {
        const viaNats = await natsQuery(nc(), endpoint, tenant, request);
        expect(viaNats.errorCode).toBe("400");
        expect(viaNats.error).toBeTruthy();
        expect(viaNats.body).toEqual({ error: { code: "INVALID_REQUEST", message: expect.any(String) } });
        const viaHttp = await http(path);
        expect(viaHttp.status).toBe(400);
        expect(viaHttp.body).toEqual({ error: { code: "INVALID_REQUEST", message: expect.any(String) } });
      });
    }

    it("when a date-time lacks its offset, then the NATS error header names the format in ASCII (+/-hh:mm)", async () => {
      const viaNats = await natsQuery(nc(), "list", "acme", { dueAfter: "2026-01-01T00:00:00" });
      expect(viaNats.body.error.message).toContain("(Z or ±hh:mm)");
      expect(viaNats.error).toContain("(Z or +/-hh:mm)");
    });

    it("when the NATS body is not JSON, or JSON but not an object, then the reply is a 400 service error", async () => {
      for (const body of ["{not json", "[1,2]", '"text"', "42"]) {
        const reply = await natsQuery(nc(), "list", "acme", body);
        expect([reply.errorCode, reply.body?.error?.code]).toEqual(["400", "INVALID_REQUEST"]);
      }
      const badUtf8 = await nc().request("timer.query.stats.acme", new Uint8Array([0x7b, 0xff, 0x7d]), { timeout: 5_000 });
      expect(badUtf8.headers?.get("Nats-Service-Error-Code")).toBe("400");
    });

    it("when an HTTP parameter is repeated or the path is unknown, then 400 or 404", async () => {
      expect((await http("/v1/tenants/acme/timers?limit=1&limit=2")).status).toBe(400);
      expect((await http("/v1/tenants/acme/timers/x?limit=2")).status).toBe(400);
      expect((await http("/v1/tenants/acme/nothing")).status).toBe(404);
      expect((await http("/v1/elsewhere")).status).toBe(404);
      expect(
        (await fetch(`${service.baseUrl}/v1/tenants/acme/stats`, { method: "POST", headers: { Authorization: `Bearer ${TOKEN}` } })).status,
      ).toBe(405);
    });
  });

  it("when the token is missing or wrong, then /v1 answers 401 and the page still loads (it holds no data)", async () => {
    for (const token of [undefined, "wrong-token", `${TOKEN}x`, TOKEN.slice(0, -1)]) {
      const reply = await httpGet(service.baseUrl, "/v1/tenants/acme/stats", token);
      expect(reply.status).toBe(401);
      expect(reply.headers.get("www-authenticate")).toMatch(/^Bearer/);
      expect(JSON.stringify(reply.body)).not.toContain("scheduled");
    }
    const basic = await fetch(`${service.baseUrl}/v1/tenants`, {
      headers: { Authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString("base64")}` },
    });
    expect(basic.status).toBe(401);
    const page = await httpGet(service.baseUrl, "/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(String(page.body)).toContain("TIMER_ADMIN_TOKEN");
    expect((await httpGet(service.baseUrl, "/metrics")).status).toBe(200);
  });

  it("when queries were answered, then timer_queries_total counts them by endpoint and outcome, and $SRV.STATS counts the errors", async () => {
    const before = await scrapeMetrics(service);
    await natsQuery(nc(), "stats", "acme");
    await natsQuery(nc(), "list", "acme", { limit: 0 });
    await http("/v1/tenants/acme/timers/x");
    const after = await scrapeMetrics(service);
    const delta = (endpoint: string, outcome: string) =>
      (after.get(series("timer_queries_total", { endpoint, outcome })) ?? 0) -
      (before.get(series("timer_queries_total", { endpoint, outcome })) ?? 0);
    expect([delta("stats", "ok"), delta("list", "error"), delta("get", "ok")]).toEqual([1, 1, 1]);
    const stats = (await nc().request("$SRV.STATS.timer-service", "", { timeout: 5_000 })).json<any>();
    const list = stats.endpoints.find((e: any) => e.name === "list");
    expect(list.num_errors).toBeGreaterThan(0);
    expect(list.last_error).toBeTruthy();
  });

  it("when a client discovers services as `nats micro ls` does, then timer-service answers $SRV.PING and $SRV.INFO with its three endpoints", async () => {
    const inbox = nc().subscribe("_INBOX.micro-ls-test", { max: 1 });
    nc().publish("$SRV.PING", "", { reply: "_INBOX.micro-ls-test" });
    for await (const message of inbox) {
      expect(message.json()).toMatchObject({
        type: "io.nats.micro.v1.ping_response",
        name: "timer-service",
        version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      });
    }
    const info = (await nc().request("$SRV.INFO.timer-service", "", { timeout: 5_000 })).json<any>();
    expect(info.type).toBe("io.nats.micro.v1.info_response");
    expect(info.endpoints.map((e: any) => [e.name, e.subject])).toEqual([
      ["get", "timer.query.get.*"],
      ["list", "timer.query.list.*"],
      ["stats", "timer.query.stats.*"],
    ]);
  });
});

describe("without TIMER_ADMIN_TOKEN", () => {
  it("when no token is configured, then / and /v1 answer 404 while NATS queries and /metrics work", async () => {
    const plain = await TimerServiceProcess.start(nats.url, {
      TIMER_CONSUMER: "no-token",
      TIMER_COMMANDS_STREAM: "NT_COMMANDS",
      TIMER_EVENTS_STREAM: "NT_EVENTS",
      TIMER_SUBJECT_PREFIX: "nt",
    });
    try {
      for (const path of ["/", "/admin/app.js", "/v1/tenants", "/v1/tenants/acme/stats"]) {
        expect((await httpGet(plain.baseUrl, path, TOKEN)).status, path).toBe(404);
        expect((await httpGet(plain.baseUrl, path)).status, path).toBe(404);
      }
      expect((await httpGet(plain.baseUrl, "/metrics")).status).toBe(200);
      expect((await natsQuery(nc(), "stats", "acme", {}, "nt")).body).toMatchObject({ tenantId: "acme", scheduled: 0 });
    } finally {
      await plain.dispose();
    }
  });
});
