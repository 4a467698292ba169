import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient, type ReceivedEvent } from "../support/timer-client.js";
import { EventStreamReader } from "../support/event-stream-reader.js";
import { scrapeMetrics, uniqueId } from "./integration-support.js";
import { waitFor } from "../support/wait-for.js";

/**
 * Completion tracking (CONTRACT §11) end to end: the built service, a real nats-server, a consumer
 * that reports over the broker. Timing assertions are lower bounds only (the machine is loaded).
 */
const TOKEN = "completion-token";
const TENANT = "confirm";

describe("completion tracking (CONTRACT §11)", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;
  let client: TimerClient;
  let reader: EventStreamReader;
  let seq = 0;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url, { TIMER_ADMIN_TOKEN: TOKEN });
    client = await TimerClient.connect(nats.url);
    reader = await EventStreamReader.start(nats.url);
  });

  afterAll(async () => {
    await reader?.close();
    await client?.close();
    await service?.dispose();
    await nats?.dispose();
  });

  const envelope = (type: string, payload: Record<string, unknown>) =>
    JSON.stringify({ id: `e2e-${++seq}`, type, tenantId: TENANT, timestampMs: Date.now(), payload: { tenantId: TENANT, ...payload } });

  async function schedule(
    serviceCallId: string,
    delivery: Record<string, unknown> | undefined,
    dueAtMs = Date.now() + 200,
  ): Promise<number> {
    const payload = {
      serviceCallId,
      dueAt: new Date(dueAtMs).toISOString(),
      createdBy: "e2e",
      createdVia: "vitest",
      ...(delivery === undefined ? {} : { delivery }),
    };
    await client.publishRaw(`timer.commands.schedule.${TENANT}`, envelope("ScheduleTimer", payload));
    return dueAtMs;
  }
  const complete = (serviceCallId: string, result?: string) =>
    client.publishRaw(
      `timer.commands.complete.${TENANT}`,
      envelope("TimerCompleted", { serviceCallId, ...(result === undefined ? {} : { result }) }),
    );
  const fail = (serviceCallId: string, reason: string) =>
    client.publishRaw(`timer.commands.fail.${TENANT}`, envelope("TimerFailed", { serviceCallId, reason }));
  const attempt = (serviceCallId: string, n: number, timeoutMs = 30_000): Promise<ReceivedEvent> =>
    client.waitFor(
      (e) => e.body.type === "DueTimeReached" && e.body.payload.serviceCallId === serviceCallId && (e.body.payload.attempt ?? 1) === n,
      timeoutMs,
    );

  async function view(serviceCallId: string): Promise<Record<string, any> | null> {
    const response = await fetch(`${service.baseUrl}/v1/tenants/${TENANT}/timers/${encodeURIComponent(serviceCallId)}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    if (response.status === 404) return null;
    return ((await response.json()) as { timer: Record<string, any> }).timer;
  }

  /** Polls the timer's view until `check` holds. */
  function until(serviceCallId: string, check: (timer: Record<string, any> | null) => boolean, timeoutMs = 30_000) {
    return waitFor(() => view(serviceCallId), { until: check, timeoutMs, everyMs: 100, what: `timer ${serviceCallId}` });
  }

  it("when the consumer completes on the first try, then the timer is Completed with attempt 1, its result and duration", async () => {
    const id = uniqueId("first");
    const dueAtMs = await schedule(id, { maxRetries: 2, backoffMs: 500, completionTimeoutMs: 60_000 });
    const event = await attempt(id, 1);
    expect(event.body.id).toBe(`${TENANT}:${id}:${dueAtMs}:1`);
    expect(event.body.payload.attempt).toBe(1);
    await until(id, (t) => t?.state === "Fired");
    await complete(id, "mail sent");
    const timer = await until(id, (t) => t?.state === "Completed");
    expect(timer).toMatchObject({ attempt: 1, result: "mail sent", createdBy: "e2e", createdVia: "vitest" });
    expect(timer!.durationMs).toBeGreaterThanOrEqual(0);
    expect(Date.parse(timer!.completedAt) - Date.parse(timer!.firedAt)).toBe(timer!.durationMs);
  });

  it("when a consumer reports the instant its event arrives, then the report is not lost even if it overtakes the record", async () => {
    const ids = Array.from({ length: 20 }, () => uniqueId("fast"));
    const dueAtMs = Date.now() + 300;
    for (const id of ids) await schedule(id, { maxRetries: 0, completionTimeoutMs: 60_000 }, dueAtMs);
    await Promise.all(ids.map(async (id) => complete((await attempt(id, 1)).body.payload.serviceCallId)));
    for (const id of ids)
      expect(await until(id, (t) => t?.state !== "Fired" && t?.state !== "Scheduled")).toMatchObject({ state: "Completed" });
  });

  it("when the consumer fails twice then completes, then attempts 2 and 3 come after backoff × 2^(attempt−1), with their own ids", async () => {
    const id = uniqueId("flaky");
    const backoffMs = 400;
    const dueAtMs = await schedule(id, { maxRetries: 3, backoffMs, completionTimeoutMs: 60_000 });
    await attempt(id, 1);
    await until(id, (t) => t?.state === "Fired");
    const failed1 = Date.now();
    await fail(id, "downstream 503");
    const second = await attempt(id, 2);
    await until(id, (t) => t?.attempt === 2);
    const failed2 = Date.now();
    await fail(id, "downstream 503 again");
    const third = await attempt(id, 3);
    expect(Date.parse(second.body.payload.reachedAt) - failed1).toBeGreaterThanOrEqual(backoffMs);
    expect(Date.parse(third.body.payload.reachedAt) - failed2).toBeGreaterThanOrEqual(backoffMs * 2);
    expect(second.body.id).toBe(`${TENANT}:${id}:${dueAtMs}:1:2`);
    expect(second.msgId).toBe(second.body.id);
    expect(third.msgId).toBe(`${TENANT}:${id}:${dueAtMs}:1:3`);
    // A report may overtake the record of its publish (publish first, then record): wait for it.
    await until(id, (t) => t?.attempt === 3);
    await complete(id);
    const timer = await until(id, (t) => t?.state === "Completed");
    expect(timer).toMatchObject({ attempt: 3 });
  });

  it("when every attempt fails, then the timer ends Failed with the last reason", async () => {
    const id = uniqueId("broken");
    await schedule(id, { maxRetries: 1, backoffMs: 200, completionTimeoutMs: 60_000 });
    await attempt(id, 1);
    await until(id, (t) => t?.state === "Fired");
    await fail(id, "first");
    await attempt(id, 2);
    await until(id, (t) => t?.attempt === 2);
    await fail(id, "second");
    const timer = await until(id, (t) => t?.state === "Failed");
    expect(timer).toMatchObject({ attempt: 2, reason: "second" });
    const metrics = await scrapeMetrics(service);
    expect(metrics.get('timer_deliveries_total{outcome="failed"}')).toBeGreaterThanOrEqual(1);
  });

  it("when no report ever comes, then the timer ends TimedOut after its retries", async () => {
    const id = uniqueId("silent");
    await schedule(id, { maxRetries: 1, backoffMs: 100, completionTimeoutMs: 1_000 });
    await attempt(id, 1);
    await attempt(id, 2);
    const timer = await until(id, (t) => t?.state === "TimedOut");
    expect(timer).toMatchObject({ attempt: 2, reason: "timeout" });
    const metrics = await scrapeMetrics(service);
    expect(metrics.get('timer_deliveries_total{outcome="timed_out"}')).toBeGreaterThanOrEqual(1);
  });

  it("when a report names an unknown, Scheduled or final timer, then it is ignored", async () => {
    const before = (await scrapeMetrics(service)).get('timer_commands_received_total{outcome="ignored",type="TimerCompleted"}') ?? 0;
    const unknown = uniqueId("unknown");
    const later = uniqueId("later");
    const final = uniqueId("final");
    await schedule(later, { maxRetries: 0 }, Date.now() + 3_600_000);
    await schedule(final, { maxRetries: 0, completionTimeoutMs: 60_000 });
    await attempt(final, 1);
    await until(final, (t) => t?.state === "Fired");
    await complete(final, "done");
    await until(final, (t) => t?.state === "Completed");
    await complete(unknown);
    await complete(later);
    await complete(final, "again");
    await fail(final, "late");
    const end = Date.now() + 15_000;
    while (
      ((await scrapeMetrics(service)).get('timer_commands_received_total{outcome="ignored",type="TimerCompleted"}') ?? 0) <
      before + 3
    ) {
      if (Date.now() > end) throw new Error("reports were not counted as ignored");
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await view(unknown)).toBeNull();
    expect(await view(later)).toMatchObject({ state: "Scheduled" });
    expect(await view(final)).toMatchObject({ state: "Completed", result: "done" });
  });

  it("when the service is killed between a publish and its report, then the report still completes the timer after the restart", async () => {
    const id = uniqueId("kill-report");
    await schedule(id, { maxRetries: 1, backoffMs: 200, completionTimeoutMs: 60_000 });
    await attempt(id, 1);
    await until(id, (t) => t?.state === "Fired");
    await service.kill("SIGKILL");
    await complete(id, "while down");
    await service.restart();
    const timer = await until(id, (t) => t?.state === "Completed");
    expect(timer).toMatchObject({ attempt: 1, result: "while down" });
    expect(reader.eventsOf(TENANT, id).length).toBe(1);
  });

  it("when the service is killed during a backoff wait, then the retry happens once after the restart", async () => {
    const id = uniqueId("kill-backoff");
    const dueAtMs = await schedule(id, { maxRetries: 2, backoffMs: 1_500, completionTimeoutMs: 60_000 });
    await attempt(id, 1);
    await until(id, (t) => t?.state === "Fired");
    await fail(id, "try later");
    await until(id, (t) => t?.reason === "try later");
    await service.kill("SIGKILL");
    await service.restart();
    await attempt(id, 2);
    await until(id, (t) => t?.attempt === 2);
    // Stored events, not the core subscription (which also sees a deduplicated republish).
    await reader.waitUntil(() => reader.eventsOf(TENANT, id).length >= 2, 15_000, "attempt 2 stored");
    await new Promise((r) => setTimeout(r, 1_000));
    const ids = reader.eventsOf(TENANT, id).map((e) => e.msgId);
    expect(ids).toEqual([`${TENANT}:${id}:${dueAtMs}:1`, `${TENANT}:${id}:${dueAtMs}:1:2`]);
    expect(await view(id)).toMatchObject({ state: "Fired", attempt: 2 });
  });
});
