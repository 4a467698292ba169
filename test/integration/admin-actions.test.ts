import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient } from "../support/timer-client.js";
import { deltas, eventually, scrapeMetrics, series, uniqueId } from "./integration-support.js";
import { eachInFlight } from "../support/in-flight.js";
import { httpGet } from "./query-support.js";

/**
 * The HTTP operator actions of CONTRACT §14 end to end on the built service: single retry and
 * cancel, bulk retry with paging, cancel by prefix, the read-only token, audit log and metric, and
 * malformed requests. Runs on SQLite, and on Postgres with TEST_TIMER_STORE=postgres.
 */
const ADMIN = "admin-token-7f3a9c1e2b";
const READER = "reader-token-0d4e8b6a5c";

describe("operator actions over HTTP (CONTRACT §14)", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;
  let client: TimerClient;
  let seq = 0;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url, {
      TIMER_ADMIN_TOKEN: ADMIN,
      TIMER_ADMIN_READ_TOKEN: READER,
      TIMER_POLLING_INTERVAL: "200",
      TIMER_BATCH_SIZE: "500",
    });
    client = await TimerClient.connect(nats.url);
  });

  afterAll(async () => {
    await client?.close();
    await service?.dispose();
    await nats?.dispose();
  });

  const send = (tenant: string, kind: string, type: string, payload: Record<string, unknown>) =>
    client.publishRaw(
      `timer.commands.${kind}.${tenant}`,
      JSON.stringify({ id: `a-${++seq}`, type, tenantId: tenant, timestampMs: Date.now(), payload: { tenantId: tenant, ...payload } }),
    );
  const schedule = (tenant: string, serviceCallId: string, dueAtMs: number, extra: Record<string, unknown> = {}) =>
    send(tenant, "schedule", "ScheduleTimer", { serviceCallId, dueAt: new Date(dueAtMs).toISOString(), ...extra });
  const missed = (tenant: string, serviceCallId: string) => schedule(tenant, serviceCallId, Date.now() - 10_000, { maxLatenessMs: 0 });

  /** `token` null: no Authorization header. */
  async function post(path: string, body?: unknown, token: string | null = ADMIN, headers: Record<string, string> = {}) {
    const response = await fetch(`${service.baseUrl}${path}`, {
      method: "POST",
      headers: {
        ...(token === null ? {} : { Authorization: `Bearer ${token}` }),
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as any };
  }
  const view = async (tenant: string, id: string) =>
    (await httpGet(service.baseUrl, `/v1/tenants/${tenant}/timers/${encodeURIComponent(id)}`, ADMIN)).body.timer;
  const stateOf = (tenant: string, id: string, state: string, timeoutMs = 20_000) =>
    eventually(async () => expect(await view(tenant, id)).toMatchObject({ state }), timeoutMs);
  const due = (tenant: string, id: string, generation: number) =>
    client.waitFor(
      (e) =>
        e.body.type === "DueTimeReached" &&
        e.body.tenantId === tenant &&
        e.body.payload.serviceCallId === id &&
        e.body.payload.generation === generation,
      20_000,
    );

  it("when each retryable state is retried over HTTP, then 202 names the command and the timer fires again as generation 2", async () => {
    const tenant = uniqueId("single");
    const [failed, timedOut, late] = ["failed", "timedout", "missed"];
    await schedule(tenant, failed, Date.now(), { delivery: { maxRetries: 0, completionTimeoutMs: 60_000 } });
    await schedule(tenant, timedOut, Date.now(), { delivery: { maxRetries: 0, completionTimeoutMs: 1_000 } });
    await missed(tenant, late);
    await stateOf(tenant, failed, "Fired");
    await send(tenant, "fail", "TimerFailed", { serviceCallId: failed, reason: "503" });
    await stateOf(tenant, failed, "Failed");
    await stateOf(tenant, timedOut, "TimedOut");
    await stateOf(tenant, late, "Missed");
    const before = await scrapeMetrics(service);

    for (const id of [failed, timedOut, late]) {
      const reply = await post(`/v1/tenants/${tenant}/timers/${id}/retry`);
      expect(reply.status).toBe(202);
      expect(reply.body.commandIds).toHaveLength(1);
      await due(tenant, id, 2);
    }

    const key = series("timer_admin_actions_total", { action: "retry" });
    expect(deltas(before, await scrapeMetrics(service), [key])[key]).toBe(3);
    const audit = service.logLines.filter((l) => l.includes('"operator action"')).map((l) => JSON.parse(l));
    expect(audit).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ action: "retry", tenantId: tenant, serviceCallId: late, count: 1, token: "admin" }),
      ]),
    );
    expect(service.logLines.some((l) => l.includes(ADMIN) || l.includes(READER))).toBe(false);
  }, 60_000);

  it("when a Scheduled timer is cancelled over HTTP, then it ends Cancelled; an unknown timer gets 404 for retry and cancel", async () => {
    const tenant = uniqueId("cancel");
    await schedule(tenant, "later", Date.now() + 3_600_000);
    await stateOf(tenant, "later", "Scheduled");

    const reply = await post(`/v1/tenants/${tenant}/timers/later/cancel`, {});

    expect(reply.status).toBe(202);
    await stateOf(tenant, "later", "Cancelled");
    expect((await post(`/v1/tenants/${tenant}/timers/nope/cancel`)).status).toBe(404);
    expect(await post(`/v1/tenants/${tenant}/timers/nope/retry`)).toMatchObject({ status: 404, body: { error: { code: "NOT_FOUND" } } });
  }, 30_000);

  it("when 2,500 Missed timers are retried in bulk 1,000 at a time, then `more` pages through all of them once, and each fires again", async () => {
    const tenant = uniqueId("bulk");
    const ids = Array.from({ length: 2_500 }, (_, i) => `job-${String(i).padStart(5, "0")}`);
    await eachInFlight(ids, 100, (id) => missed(tenant, id));
    await missed(tenant, "other-1");
    await eventually(async () => {
      const stats = (await httpGet(service.baseUrl, `/v1/tenants/${tenant}/stats`, ADMIN)).body;
      expect(stats.missed).toBe(2_501);
    }, 60_000);
    const before = await scrapeMetrics(service);

    const commandIds: string[] = [];
    const mores: boolean[] = [];
    let cursor: string | undefined;
    do {
      const reply = await post(`/v1/tenants/${tenant}/timers/retry`, {
        state: "Missed",
        serviceCallIdPrefix: "job-",
        limit: 1_000,
        ...(cursor === undefined ? {} : { cursor }),
      });
      expect(reply.status).toBe(202);
      commandIds.push(...reply.body.commandIds);
      mores.push(reply.body.more);
      cursor = reply.body.nextCursor;
    } while (mores[mores.length - 1]);

    expect(mores).toEqual([true, true, false]);
    expect(new Set(commandIds).size).toBe(2_500);
    await eventually(() => {
      const refired = new Set(
        client.events
          .filter((e) => e.body.type === "DueTimeReached" && e.body.tenantId === tenant && e.body.payload.generation === 2)
          .map((e) => e.body.payload.serviceCallId),
      );
      expect(refired.size).toBe(2_500);
    }, 60_000);
    expect(await view(tenant, "other-1")).toMatchObject({ state: "Missed", generation: 1 });
    const key = series("timer_admin_actions_total", { action: "retry_bulk" });
    expect(deltas(before, await scrapeMetrics(service), [key])[key]).toBe(3);
    const again = await post(`/v1/tenants/${tenant}/timers/retry`, { state: "Missed", serviceCallIdPrefix: "job-" });
    expect(again).toMatchObject({ status: 202, body: { commandIds: [], more: false } });
  }, 180_000);

  it("when timers are cancelled by prefix over HTTP, then one CancelTimersByPrefix cancels the matching ones only", async () => {
    const tenant = uniqueId("prefix");
    for (const id of ["order-1:a", "order-1:b", "order-2:a"]) await schedule(tenant, id, Date.now() + 3_600_000);
    await stateOf(tenant, "order-2:a", "Scheduled");

    const reply = await post(`/v1/tenants/${tenant}/timers/cancel`, { serviceCallIdPrefix: "order-1:" });

    expect(reply).toMatchObject({ status: 202, body: { commandIds: [expect.any(String)] } });
    await stateOf(tenant, "order-1:a", "Cancelled");
    await stateOf(tenant, "order-1:b", "Cancelled");
    expect(await view(tenant, "order-2:a")).toMatchObject({ state: "Scheduled" });
  }, 30_000);

  it("when the read-only token posts, then 403 FORBIDDEN and nothing changes; its GETs work; no or a wrong token gets 401", async () => {
    const tenant = uniqueId("ro");
    await schedule(tenant, "keep", Date.now() + 3_600_000);
    await stateOf(tenant, "keep", "Scheduled");

    expect(await post(`/v1/tenants/${tenant}/timers/keep/cancel`, undefined, READER)).toMatchObject({
      status: 403,
      body: { error: { code: "FORBIDDEN" } },
    });
    expect((await httpGet(service.baseUrl, `/v1/tenants/${tenant}/timers/keep`, READER)).status).toBe(200);
    expect((await httpGet(service.baseUrl, "/", READER)).status).toBe(200);
    expect((await post(`/v1/tenants/${tenant}/timers/keep/cancel`, undefined, null)).status).toBe(401);
    expect((await post(`/v1/tenants/${tenant}/timers/keep/cancel`, undefined, "wrong-token-0123456789")).status).toBe(401);
    // A cross-site form can send neither the Authorization header nor JSON: refused before anything happens.
    const form = await fetch(`${service.baseUrl}/v1/tenants/${tenant}/timers/cancel`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "serviceCallIdPrefix=k",
    });
    expect(form.status).toBe(401);
    await new Promise((r) => setTimeout(r, 300));
    expect(await view(tenant, "keep")).toMatchObject({ state: "Scheduled" });
  }, 30_000);

  it.each([
    ["a body that is not JSON", "/timers/retry", "{nope", {}],
    ["a JSON array", "/timers/retry", "[]", {}],
    ["a state that cannot be retried", "/timers/retry", { state: "Reached" }, {}],
    ["no state", "/timers/retry", {}, {}],
    ["an unknown member", "/timers/retry", { state: "Failed", everything: true }, {}],
    ["a limit over 10,000", "/timers/retry", { state: "Failed", limit: 10_001 }, {}],
    ["a forged cursor", "/timers/retry", { state: "Failed", cursor: "abc" }, {}],
    ["an empty prefix", "/timers/cancel", { serviceCallIdPrefix: "" }, {}],
    ["a prefix with a control character", "/timers/cancel", { serviceCallIdPrefix: "a\u0007" }, {}],
    ["a body on a single retry", "/timers/x/retry", { force: true }, {}],
    ["a form body", "/timers/cancel", "serviceCallIdPrefix=a", { "Content-Type": "application/x-www-form-urlencoded" }],
    ["a query parameter", "/timers/cancel?serviceCallIdPrefix=a", { serviceCallIdPrefix: "a" }, {}],
  ])("when a POST carries %s, then 400 INVALID_REQUEST", async (_label, path, body, headers) => {
    const reply = await post(`/v1/tenants/malformed${path}`, body, ADMIN, headers as Record<string, string>);

    expect(reply).toMatchObject({ status: 400, body: { error: { code: "INVALID_REQUEST" } } });
  });

  it("when the latest failures are listed (state, order changedDesc, createdBy, changedSince), then they come newest first and page by cursor", async () => {
    const tenant = uniqueId("history");
    for (const [i, id] of ["f1", "f2", "f3"].entries()) {
      await schedule(tenant, id, Date.now() - 10_000, { maxLatenessMs: 0, createdBy: i === 1 ? "billing" : "ops" });
      await stateOf(tenant, id, "Missed");
    }
    const get = async (query: string) => (await httpGet(service.baseUrl, `/v1/tenants/${tenant}/timers?${query}`, ADMIN)).body;

    const first = await get("state=Missed&order=changedDesc&limit=2");
    expect(first.timers.map((t: any) => t.serviceCallId)).toEqual(["f3", "f2"]);
    expect(first.timers.every((t: any) => typeof t.updatedAt === "string")).toBe(true);
    const second = await get(`state=Missed&order=changedDesc&limit=2&cursor=${first.nextCursor}`);
    expect(second).toMatchObject({ timers: [expect.objectContaining({ serviceCallId: "f1" })], nextCursor: null });
    expect((await get("createdBy=billing")).timers.map((t: any) => t.serviceCallId)).toEqual(["f2"]);
    const since = first.timers[1].updatedAt;
    expect((await get(`order=changedDesc&changedSince=${since}`)).timers.map((t: any) => t.serviceCallId)).toEqual(["f3", "f2"]);
    expect(await httpGet(service.baseUrl, `/v1/tenants/${tenant}/timers?cursor=${first.nextCursor}`, ADMIN)).toMatchObject({ status: 400 });
    expect(await httpGet(service.baseUrl, `/v1/tenants/${tenant}/timers?order=newest`, ADMIN)).toMatchObject({ status: 400 });
    expect(await httpGet(service.baseUrl, `/v1/tenants/${tenant}/timers?changedSince=2026-01-01T00:00:00`, ADMIN)).toMatchObject({
      status: 400,
    });
  }, 30_000);

  it("when the due histogram is asked, then it counts overdue and per-hour Scheduled timers for 24 h; parameters are refused", async () => {
    const tenant = uniqueId("chart");
    for (const h of [0, 2, 2]) await schedule(tenant, `c-${h}-${Math.random()}`, Date.now() + h * 3_600_000 + 120_000);
    await eventually(async () => expect((await httpGet(service.baseUrl, `/v1/tenants/${tenant}/stats`, ADMIN)).body.scheduled).toBe(3));

    const reply = await httpGet(service.baseUrl, `/v1/tenants/${tenant}/due-histogram`, READER);

    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ tenantId: tenant, overdue: 0, overdueCapped: false, capped: false });
    expect(reply.body.hours.map((h: any) => h.count)).toEqual(Array.from({ length: 24 }, (_, i) => (i === 0 ? 1 : i === 2 ? 2 : 0)));
    expect((await httpGet(service.baseUrl, `/v1/tenants/${tenant}/due-histogram?hours=48`, ADMIN)).status).toBe(400);
  }, 30_000);

  it.each(["__proto__=x", "constructor=x", "toString=x", "stat=Failed"])(
    "when a GET list carries the unknown query parameter %s, then 400 INVALID_REQUEST",
    async (query) => {
      const reply = await httpGet(service.baseUrl, `/v1/tenants/malformed/timers?${query}`, ADMIN);

      expect(reply).toMatchObject({ status: 400, body: { error: { code: "INVALID_REQUEST" } } });
    },
  );
});
