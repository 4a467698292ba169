import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { headers as natsHeaders, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient, type ReceivedEvent } from "../support/timer-client.js";
import { eventually, uniqueId } from "./integration-support.js";
import { publishWithRawHeaders } from "../support/raw-publish.js";

/**
 * W3C trace context through the service (CONTRACT §13), end to end on the built service: every
 * event a command causes carries its trace-id and flags with a span-id of the service's own and its
 * tracestate, across a restart; queries show the trace-id. Runs on SQLite, and on Postgres with
 * TEST_TIMER_STORE=postgres.
 */
const TOKEN = "trace-token-0123456789";
const TENANT = "trace";
const PRODUCER_SPAN = "00f067aa0ba902b7";
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

function newTraceId(): string {
  return Array.from({ length: 32 }, () => "0123456789abcdef"[Math.floor(Math.random() * 16)]).join("");
}

function parts(event: ReceivedEvent): { traceId: string; spanId: string; flags: string } {
  const match = TRACEPARENT.exec(event.traceparent ?? "");
  expect(match, `traceparent of ${event.body.type}: ${event.traceparent}`).not.toBeNull();
  return { traceId: match![1]!, spanId: match![2]!, flags: match![3]! };
}

describe("trace context on events (CONTRACT §13)", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;
  let client: TimerClient;
  let seq = 0;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url, { TIMER_ADMIN_TOKEN: TOKEN, TIMER_POLLING_INTERVAL_MS: "100" });
    client = await TimerClient.connect(nats.url);
  });

  afterAll(async () => {
    await client?.close();
    await service?.dispose();
    await nats?.dispose();
  });

  async function send(
    kind: string,
    type: string,
    payload: Record<string, unknown>,
    trace: { traceparent?: string; tracestate?: string } = {},
  ): Promise<void> {
    const h = natsHeaders();
    if (trace.traceparent !== undefined) h.set("traceparent", trace.traceparent);
    if (trace.tracestate !== undefined) h.set("tracestate", trace.tracestate);
    const body = JSON.stringify({
      id: `t-${++seq}`,
      type,
      tenantId: TENANT,
      timestampMs: Date.now(),
      payload: { tenantId: TENANT, ...payload },
    });
    await jetstream(client.connection as NatsConnection).publish(`timer.commands.${kind}.${TENANT}`, new TextEncoder().encode(body), {
      headers: h,
    });
  }
  const traced = (traceId: string, flags = "01") => ({
    traceparent: `00-${traceId}-${PRODUCER_SPAN}-${flags}`,
    tracestate: "vendor=abc,other=1",
  });
  const eventOf = (type: string, serviceCallId: string, extra: (e: ReceivedEvent) => boolean = () => true) =>
    client.waitFor((e) => e.body.type === type && e.body.payload?.serviceCallId === serviceCallId && extra(e), 30_000);

  async function traceIdOf(serviceCallId: string): Promise<unknown> {
    const response = await fetch(`${service.baseUrl}/v1/tenants/${TENANT}/timers/${encodeURIComponent(serviceCallId)}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    return ((await response.json()) as { timer: { traceId?: string } }).timer.traceId;
  }

  function expectContinues(event: ReceivedEvent, traceId: string, flags = "01"): void {
    const p = parts(event);
    expect(p).toMatchObject({ traceId, flags });
    expect(p.spanId).not.toBe(PRODUCER_SPAN);
    expect(event.tracestate).toBe("vendor=abc,other=1");
  }

  it("DueTimeReached continues the command's trace, with flags and tracestate; the query shows the trace-id", async () => {
    const id = uniqueId("due");
    const traceId = newTraceId();
    await send("schedule", "ScheduleTimer", { serviceCallId: id, dueAt: new Date(Date.now() + 300).toISOString() }, traced(traceId, "00"));
    expectContinues(await eventOf("DueTimeReached", id), traceId, "00");
    expect(await traceIdOf(id)).toBe(traceId);
  });

  it("when a command's tracestate holds a bare LF or CR, then the headers are dropped and the timer is stored and fires", async () => {
    for (const breaker of ["\n", "\r"]) {
      const id = uniqueId("bare-break");
      const traceId = newTraceId();
      const body = JSON.stringify({
        id: `t-${++seq}`,
        type: "ScheduleTimer",
        tenantId: TENANT,
        timestampMs: Date.now(),
        payload: { tenantId: TENANT, serviceCallId: id, dueAt: new Date(Date.now() + 300).toISOString() },
      });
      await publishWithRawHeaders(
        nats.url,
        `timer.commands.schedule.${TENANT}`,
        `traceparent: 00-${traceId}-${PRODUCER_SPAN}-01\r\ntracestate: vendor=a${breaker}b`,
        body,
      );
      const due = await eventOf("DueTimeReached", id);
      // The client library refuses the whole header block, so the command counts as untraced:
      // its events carry a trace of the service's own.
      expect(parts(due).traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(due.tracestate).toBeUndefined();
      expect(
        client.events.some(
          (e) => e.body.type === "CommandRejected" && e.body.tenantId === TENANT && e.body.payload?.subject?.endsWith(TENANT),
        ),
      ).toBe(false);
    }
  });

  it("DueTimeMissed continues the command's trace", async () => {
    const id = uniqueId("missed");
    const traceId = newTraceId();
    await send(
      "schedule",
      "ScheduleTimer",
      { serviceCallId: id, dueAt: new Date(Date.now() - 10_000).toISOString(), maxLatenessMs: 0 },
      traced(traceId),
    );
    expectContinues(await eventOf("DueTimeMissed", id), traceId);
  });

  it("each retry continues the trace with a span-id of its own", async () => {
    const id = uniqueId("retried");
    const traceId = newTraceId();
    await send(
      "schedule",
      "ScheduleTimer",
      { serviceCallId: id, dueAt: new Date().toISOString(), delivery: { maxRetries: 1, backoffMs: 100, completionTimeoutMs: 60_000 } },
      traced(traceId),
    );
    const first = await eventOf("DueTimeReached", id, (e) => e.body.payload.attempt === 1);
    await send("fail", "TimerFailed", { serviceCallId: id, reason: "boom" });
    const second = await eventOf("DueTimeReached", id, (e) => e.body.payload.attempt === 2);
    expectContinues(first, traceId);
    expectContinues(second, traceId);
    expect(parts(second).spanId).not.toBe(parts(first).spanId);
  });

  it("every occurrence of a recurring timer continues the trace, across a restart, until a later command changes it", async () => {
    const id = uniqueId("recurring");
    const traceId = newTraceId();
    await send(
      "schedule",
      "ScheduleTimer",
      { serviceCallId: id, dueAt: new Date().toISOString(), repeat: { everyMs: 1_000 } },
      traced(traceId),
    );
    expectContinues(await eventOf("DueTimeReached", id, (e) => e.body.payload.occurrence === 1), traceId);
    await service.kill("SIGTERM");
    await service.restart();
    const after = await eventOf("DueTimeReached", id, (e) => e.body.payload.occurrence >= 2 && e.receivedAtMs > Date.now() - 2_000);
    expectContinues(after, traceId);
    const later = newTraceId();
    const dueAt = new Date(Date.now() + 200).toISOString();
    await send("schedule", "ScheduleTimer", { serviceCallId: id, dueAt, repeat: { everyMs: 1_000, maxOccurrences: 1 } }, traced(later));
    expectContinues(await eventOf("DueTimeReached", id, (e) => e.body.payload.generation === 2), later);
    expect(await traceIdOf(id)).toBe(later);
  });

  it("CommandRejected continues the trace of the rejected command", async () => {
    const id = uniqueId("rejected");
    const traceId = newTraceId();
    await send("schedule", "ScheduleTimer", { serviceCallId: id, dueAt: "not a date" }, traced(traceId));
    const rejected = await client.waitFor((e) => e.body.type === "CommandRejected" && e.body.payload.serviceCallId === id, 30_000);
    expectContinues(rejected, traceId);
  });

  it("a command without a valid traceparent gets a new trace, kept for all its events; an invalid one is no rejection", async () => {
    const none = uniqueId("untraced");
    const invalid = uniqueId("invalid");
    await send("schedule", "ScheduleTimer", {
      serviceCallId: none,
      dueAt: new Date().toISOString(),
      repeat: { everyMs: 1_000, maxOccurrences: 2 },
    });
    await send(
      "schedule",
      "ScheduleTimer",
      { serviceCallId: invalid, dueAt: new Date().toISOString() },
      { traceparent: `00-${"0".repeat(32)}-${PRODUCER_SPAN}-01` },
    );
    const first = await eventOf("DueTimeReached", none, (e) => e.body.payload.occurrence === 1);
    const second = await eventOf("DueTimeReached", none, (e) => e.body.payload.occurrence === 2);
    expect(parts(first).traceId).toBe(parts(second).traceId);
    expect(await traceIdOf(none)).toBe(parts(first).traceId);
    const fired = await eventOf("DueTimeReached", invalid);
    expect(parts(fired).traceId).not.toBe("0".repeat(32));
    expect(fired.tracestate).toBeUndefined();
    await eventually(async () =>
      expect(client.events.some((e) => e.body.type === "CommandRejected" && e.body.payload.serviceCallId === invalid)).toBe(false),
    );
  });
});
