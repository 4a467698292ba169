import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient } from "../support/timer-client.js";
import { commandsSeries, deltas, eventually, scrapeMetrics, uniqueId } from "./integration-support.js";

/**
 * `RetryTimer` over NATS (CONTRACT §14), end to end on the built service: each retryable state
 * (`Failed`, `TimedOut`, `Missed`) fires again as a new generation; every other state is ignored.
 * Runs on SQLite, and on Postgres with TEST_TIMER_STORE=postgres.
 */
const TOKEN = "retry-token-0123456789";
const TENANT = "retry";

describe("RetryTimer over NATS (CONTRACT §14)", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;
  let client: TimerClient;
  let seq = 0;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url, { TIMER_ADMIN_TOKEN: TOKEN });
    client = await TimerClient.connect(nats.url);
  });

  afterAll(async () => {
    await client?.close();
    await service?.dispose();
    await nats?.dispose();
  });

  const send = (kind: string, type: string, payload: Record<string, unknown>) =>
    client.publishRaw(
      `timer.commands.${kind}.${TENANT}`,
      JSON.stringify({ id: `r-${++seq}`, type, tenantId: TENANT, timestampMs: Date.now(), payload: { tenantId: TENANT, ...payload } }),
    );
  const schedule = (serviceCallId: string, dueAtMs: number, extra: Record<string, unknown> = {}) =>
    send("schedule", "ScheduleTimer", { serviceCallId, dueAt: new Date(dueAtMs).toISOString(), ...extra });
  const retry = (serviceCallId: string) => send("retry", "RetryTimer", { serviceCallId });

  async function view(serviceCallId: string): Promise<Record<string, any> | null> {
    const response = await fetch(`${service.baseUrl}/v1/tenants/${TENANT}/timers/${encodeURIComponent(serviceCallId)}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    return response.status === 404 ? null : ((await response.json()) as { timer: Record<string, any> }).timer;
  }
  const stateOf = (serviceCallId: string, state: string, timeoutMs = 20_000) =>
    eventually(async () => expect(await view(serviceCallId)).toMatchObject({ state }), timeoutMs);
  const due = (serviceCallId: string, generation: number) =>
    client.waitFor(
      (e) => e.body.type === "DueTimeReached" && e.body.payload.serviceCallId === serviceCallId && e.body.payload.generation === generation,
      20_000,
    );

  /** Brings a fresh timer into `state` over the broker. */
  async function timerIn(state: "Failed" | "TimedOut" | "Missed"): Promise<string> {
    const id = uniqueId(state.toLowerCase());
    if (state === "Missed") {
      await schedule(id, Date.now() - 10_000, { maxLatenessMs: 0 });
    } else {
      const completionTimeoutMs = state === "TimedOut" ? 1_000 : 60_000;
      await schedule(id, Date.now(), { delivery: { maxRetries: 0, completionTimeoutMs } });
      await due(id, 1);
      await stateOf(id, "Fired");
      if (state === "Failed") await send("fail", "TimerFailed", { serviceCallId: id, reason: "downstream 503" });
    }
    await stateOf(id, state);
    return id;
  }

  it.each(["Failed", "TimedOut", "Missed"] as const)(
    "when a %s timer is retried, then it fires at once as generation 2 and the command counts as accepted",
    async (state) => {
      const id = await timerIn(state);
      const before = await scrapeMetrics(service);
      const sentAt = Date.now();

      await retry(id);

      const event = await due(id, 2);
      expect(event.body.payload.dueAt).toBe(new Date(Date.parse(event.body.payload.dueAt)).toISOString());
      expect(Date.parse(event.body.payload.dueAt)).toBeGreaterThanOrEqual(sentAt);
      expect(event.body.payload.attempt ?? 1).toBe(1);
      expect(event.receivedAtMs - sentAt).toBeLessThan(10_000);
      // Published first, then recorded: the new state shows shortly after the event.
      await eventually(async () =>
        expect(await view(id)).toMatchObject({ generation: 2, state: state === "Missed" ? "Reached" : "Fired" }),
      );
      const key = commandsSeries("RetryTimer", "accepted");
      await eventually(async () => expect(deltas(before, await scrapeMetrics(service), [key])[key]).toBe(1));
    },
    60_000,
  );

  it("when Scheduled, Reached, Cancelled, Fired and Completed timers and an unknown key are retried, then each is ignored and none fires again", async () => {
    const scheduled = uniqueId("scheduled");
    const reached = uniqueId("reached");
    const cancelled = uniqueId("cancelled");
    const fired = uniqueId("fired");
    const completed = uniqueId("completed");
    await schedule(scheduled, Date.now() + 3_600_000);
    await schedule(reached, Date.now());
    await schedule(cancelled, Date.now() + 3_600_000);
    await send("cancel", "CancelTimer", { serviceCallId: cancelled });
    for (const id of [fired, completed]) await schedule(id, Date.now(), { delivery: { maxRetries: 0, completionTimeoutMs: 600_000 } });
    await stateOf(reached, "Reached");
    await stateOf(fired, "Fired");
    await stateOf(completed, "Fired");
    await send("complete", "TimerCompleted", { serviceCallId: completed });
    await stateOf(completed, "Completed");
    const views = await Promise.all([scheduled, reached, cancelled, fired, completed].map(view));
    const before = await scrapeMetrics(service);

    for (const id of [scheduled, reached, cancelled, fired, completed, uniqueId("unknown")]) await retry(id);

    const ignored = commandsSeries("RetryTimer", "ignored");
    await eventually(async () => expect(deltas(before, await scrapeMetrics(service), [ignored])[ignored]).toBe(6));
    expect(await Promise.all([scheduled, reached, cancelled, fired, completed].map(view))).toEqual(views);
    const ids = new Set([scheduled, reached, cancelled, fired, completed]);
    expect(
      client.received("DueTimeReached").filter((e) => ids.has(e.body.payload.serviceCallId) && e.body.payload.generation === 2),
    ).toEqual([]);
  }, 60_000);
});
