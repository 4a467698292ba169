import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AckPolicy } from "@nats-io/jetstream";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient } from "../support/timer-client.js";
import { barrier, eventsFor, fromNow, manager, publishWithAck, scheduleEnvelope, uniqueId, UTC_MS } from "./integration-support.js";

/**
 * Scheduling and firing through the real service, with the DEFAULT polling interval (5 s): every
 * timer here fires well before a poll would find it, so the precise wake-up is exercised throughout.
 */
describe("schedule and fire (default polling interval)", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;
  let client: TimerClient;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url);
    client = await TimerClient.connect(nats.url);
  });

  afterAll(async () => {
    await client?.close();
    await service?.dispose();
    await nats?.dispose();
  });

  it("when a timer is scheduled, then exactly one DueTimeReached with the contract's envelope arrives on timer.events.due.{tenant}", async () => {
    const tenantId = "fire-envelope";
    const serviceCallId = uniqueId("call");
    const data = {
      text: 'grüße, 日本語, emoji 🎉👩‍👩‍👧, quote " backslash \\ newline \n tab \t',
      nested: { list: [1, -2.5, 0, null, true, false, "x", { deep: [[[]]] }], empty: {}, emptyList: [] },
      big: 9007199254740991,
      small: 1.5e-7,
    };
    const dueAtMs = Date.now() + 400;
    const scheduledAt = Date.now();
    await client.schedule(tenantId, serviceCallId, new Date(dueAtMs), { data, correlationId: "req-42-ü" });

    const event = await client.waitForDue(tenantId, serviceCallId);
    const { body } = event;
    const expectedId = `${tenantId}:${serviceCallId}:${dueAtMs}:1`;
    expect(event.subject).toBe(`timer.events.due.${tenantId}`);
    expect(Object.keys(body).sort()).toEqual(["correlationId", "id", "payload", "tenantId", "timestampMs", "type"]);
    expect(body.id).toBe(expectedId);
    expect(event.msgId).toBe(expectedId);
    expect(body.type).toBe("DueTimeReached");
    expect(body.tenantId).toBe(tenantId);
    expect(body.correlationId).toBe("req-42-ü");
    expect(Number.isInteger(body.timestampMs)).toBe(true);
    expect(body.timestampMs).toBeGreaterThanOrEqual(scheduledAt);
    expect(body.timestampMs).toBeLessThanOrEqual(event.receivedAtMs);

    const payload = body.payload;
    expect(Object.keys(payload).sort()).toEqual(["data", "dueAt", "generation", "lateMs", "reachedAt", "serviceCallId", "tenantId"]);
    expect(payload.generation).toBe(1);
    expect(payload.lateMs).toBe(Date.parse(payload.reachedAt) - dueAtMs);
    expect(payload.lateMs).toBeGreaterThanOrEqual(0);
    expect(payload.tenantId).toBe(tenantId);
    expect(payload.serviceCallId).toBe(serviceCallId);
    expect(payload.dueAt).toBe(new Date(dueAtMs).toISOString());
    expect(payload.dueAt).toMatch(UTC_MS);
    expect(payload.reachedAt).toMatch(UTC_MS);
    expect(Date.parse(payload.reachedAt)).toBeGreaterThanOrEqual(dueAtMs);
    expect(Date.parse(payload.reachedAt)).toBeLessThanOrEqual(body.timestampMs);
    expect(payload.data).toEqual(data);
    expect(event.receivedAtMs).toBeGreaterThanOrEqual(dueAtMs);

    await barrier(client, tenantId);
    expect(eventsFor(client, "DueTimeReached", tenantId, serviceCallId)).toHaveLength(1);
  });

  it("when data is any JSON value (0, false, empty string, [], {}), then it is echoed unchanged", async () => {
    const tenantId = "fire-data";
    const values: unknown[] = [0, false, "", [], {}, "plain text", -12.75, ["a", { b: null }]];
    const ids = values.map(() => uniqueId("data"));
    const dueAt = fromNow(100);
    for (const [i, data] of values.entries()) await client.schedule(tenantId, ids[i]!, dueAt, { data });

    const events = await Promise.all(ids.map((id) => client.waitForDue(tenantId, id)));
    events.forEach((event, i) => {
      expect(event.body.payload, `data ${JSON.stringify(values[i])}`).toHaveProperty("data");
      expect(event.body.payload.data).toEqual(values[i]);
    });
  });

  it("when data and correlationId are absent or null, then the event has no data and no correlationId member", async () => {
    const tenantId = "fire-absent";
    const absent = uniqueId("absent");
    const nulls = uniqueId("nulls");
    const dueAt = fromNow(50);
    await client.schedule(tenantId, absent, dueAt);
    await client.publishRaw(
      `timer.commands.schedule.${tenantId}`,
      JSON.stringify(scheduleEnvelope(tenantId, nulls, dueAt, { correlationId: null }, { data: null })),
    );

    for (const serviceCallId of [absent, nulls]) {
      const { body } = await client.waitForDue(tenantId, serviceCallId);
      expect(body, serviceCallId).not.toHaveProperty("correlationId");
      expect(body.payload, serviceCallId).not.toHaveProperty("data");
      expect(Object.keys(body.payload).sort()).toEqual(["dueAt", "generation", "lateMs", "reachedAt", "serviceCallId", "tenantId"]);
    }
  });

  it("when dueAt carries an offset or a nanosecond fraction, then the event's dueAt and id are the same instant in UTC milliseconds, truncated", async () => {
    const tenantId = "fire-format";
    const base = Math.floor((Date.now() + 500) / 1000) * 1000; // a whole second, within ±0.5 s of now
    const cases = [
      // 2 hours ahead of UTC: the local wall time is UTC + 2 h.
      { id: uniqueId("plus2"), dueAt: isoWithOffset(base + 123, 120), expectedMs: base + 123 },
      { id: uniqueId("minus0530"), dueAt: isoWithOffset(base + 7, -330), expectedMs: base + 7 },
      { id: uniqueId("nanos"), dueAt: `${new Date(base).toISOString().slice(0, 19)}.123456789Z`, expectedMs: base + 123 },
      // .9999999 must be truncated to .999, not rounded up to the next second.
      { id: uniqueId("round"), dueAt: `${new Date(base).toISOString().slice(0, 19)}.9999999Z`, expectedMs: base + 999 },
      { id: uniqueId("noms"), dueAt: `${new Date(base).toISOString().slice(0, 19)}Z`, expectedMs: base },
      { id: uniqueId("offnanos"), dueAt: isoWithOffset(base + 42, 120).replace(".042+", ".042987+"), expectedMs: base + 42 },
    ];
    for (const c of cases) await client.schedule(tenantId, c.id, c.dueAt);

    for (const c of cases) {
      const event = await client.waitForDue(tenantId, c.id);
      expect(event.body.payload.dueAt, c.dueAt).toBe(new Date(c.expectedMs).toISOString());
      expect(event.body.id, c.dueAt).toBe(`${tenantId}:${c.id}:${c.expectedMs}:1`);
      expect(event.msgId, c.dueAt).toBe(`${tenantId}:${c.id}:${c.expectedMs}:1`);
      expect(event.receivedAtMs, `${c.dueAt} arrived early`).toBeGreaterThanOrEqual(c.expectedMs);
      expect(Date.parse(event.body.payload.reachedAt), `${c.dueAt} reached early`).toBeGreaterThanOrEqual(c.expectedMs);
    }
  });

  it("when dueAt is in the past, then the timer fires promptly (well before the 5 s poll)", async () => {
    const tenantId = "fire-past";
    const serviceCallId = uniqueId("past");
    const dueAt = "2020-01-01T00:00:00.000Z";
    const publishedAt = Date.now();
    await client.schedule(tenantId, serviceCallId, dueAt);

    const event = await client.waitForDue(tenantId, serviceCallId);
    const latency = event.receivedAtMs - publishedAt;
    console.info(`past-due timer fired ${latency} ms after publish`);
    expect(latency).toBeLessThan(1_000);
    expect(event.body.payload.dueAt).toBe(dueAt);
    expect(event.body.id).toBe(`${tenantId}:${serviceCallId}:${Date.parse(dueAt)}:1`);
  });

  it("when timers are due soon, then none fires early (neither received nor reachedAt before dueAt)", async () => {
    const tenantId = "fire-early";
    const timers = [30, 90, 150, 210, 270, 330, 390, 450].map((offset) => ({ id: uniqueId("early"), dueAtMs: Date.now() + offset }));
    for (const t of timers) await client.schedule(tenantId, t.id, new Date(t.dueAtMs));

    for (const t of timers) {
      const event = await client.waitForDue(tenantId, t.id);
      expect(event.receivedAtMs).toBeGreaterThanOrEqual(t.dueAtMs);
      expect(Date.parse(event.body.payload.reachedAt)).toBeGreaterThanOrEqual(t.dueAtMs);
    }
  });

  it("when a timer is 1.5 s ahead and the polling interval is the default 5 s, then it fires within a few hundred ms of its due time", async () => {
    const tenantId = "fire-wake";
    const serviceCallId = uniqueId("wake");
    const dueAtMs = Date.now() + 1_500;
    await client.schedule(tenantId, serviceCallId, new Date(dueAtMs));

    const event = await client.waitForDue(tenantId, serviceCallId, 10_000);
    const lag = event.receivedAtMs - dueAtMs;
    console.info(
      `precise wake: received ${lag} ms after dueAt; reachedAt - dueAt = ${Date.parse(event.body.payload.reachedAt) - dueAtMs} ms`,
    );
    expect(lag).toBeGreaterThanOrEqual(0);
    expect(lag).toBeLessThan(1_000);
  });

  it("when a far timer is rescheduled to 300 ms ahead with the default 5 s polling interval, then it fires at the new time, not at the next poll", async () => {
    const tenantId = "fire-wake";
    const serviceCallId = uniqueId("rewake");
    const ts = Date.now();
    await client.schedule(tenantId, serviceCallId, fromNow(3_600_000), { timestampMs: ts });
    const dueAtMs = Date.now() + 300;
    await client.schedule(tenantId, serviceCallId, new Date(dueAtMs), { timestampMs: ts + 1 });

    const event = await client.waitForDue(tenantId, serviceCallId, 10_000);
    const lag = event.receivedAtMs - dueAtMs;
    console.info(`precise wake after reschedule: received ${lag} ms after dueAt`);
    expect(event.body.payload.dueAt).toBe(new Date(dueAtMs).toISOString());
    expect(lag).toBeGreaterThanOrEqual(0);
    expect(lag).toBeLessThan(1_000);
  });

  it("when a bare payload (no envelope) is published, then it is accepted and fires without correlationId", async () => {
    const tenantId = "fire-bare";
    const serviceCallId = uniqueId("bare");
    const dueAt = fromNow(50);
    await client.publishRaw(
      `timer.commands.schedule.${tenantId}`,
      JSON.stringify({ tenantId, serviceCallId, dueAt, data: { bare: true } }),
    );

    const { body } = await client.waitForDue(tenantId, serviceCallId);
    expect(body.id).toBe(`${tenantId}:${serviceCallId}:${Date.parse(dueAt)}:1`);
    expect(body.payload.data).toEqual({ bare: true });
    expect(body).not.toHaveProperty("correlationId");
  });

  it("when the service has started, then the streams and the consumer of the contract exist, TIMER_EVENTS with a duplicate window of at least 2 minutes", async () => {
    const jsm = await manager(client);
    const commands = await jsm.streams.info("TIMER_COMMANDS");
    expect(commands.config.subjects).toEqual(["timer.commands.>"]);
    const events = await jsm.streams.info("TIMER_EVENTS");
    expect(events.config.subjects).toEqual(["timer.events.>"]);
    expect(events.config.duplicate_window).toBeGreaterThanOrEqual(120 * 1e9);
    const consumer = await jsm.consumers.info("TIMER_COMMANDS", "timer-service");
    expect(consumer.config.durable_name).toBe("timer-service");
    expect(consumer.config.ack_policy).toBe(AckPolicy.Explicit);
    expect(consumer.config.deliver_subject ?? undefined).toBeUndefined(); // a pull consumer
  });

  it("when a timer fires, then the event is stored in TIMER_EVENTS with its Nats-Msg-Id, and a republish of the same id is dropped as a duplicate", async () => {
    const tenantId = uniqueId("stream").replace(/[^A-Za-z0-9_-]/g, "");
    const serviceCallId = uniqueId("stored");
    await client.schedule(tenantId, serviceCallId, fromNow(20), { data: { n: 1 }, correlationId: "c-stream" });
    const event = await client.waitForDue(tenantId, serviceCallId);

    const jsm = await manager(client);
    const subject = `timer.events.due.${tenantId}`;
    const stored = await jsm.streams.getMessage("TIMER_EVENTS", { last_by_subj: subject });
    expect(stored).not.toBeNull();
    expect(stored!.header?.get("Nats-Msg-Id")).toBe(event.body.id);
    expect(stored!.json()).toEqual(event.body);

    // A republish as the service would make it: the same id and trace headers.
    const ack = await publishWithAck(client, subject, JSON.stringify(event.body), event.body.id, stored!.header);
    expect(ack.duplicate).toBe(true);
    expect(ack.seq).toBe(stored!.seq);
    const stillLast = await jsm.streams.getMessage("TIMER_EVENTS", { last_by_subj: subject });
    expect(stillLast!.seq).toBe(stored!.seq);
  });
});

/** `epochMs` written as local time at `offsetMinutes` from UTC, with milliseconds and `±hh:mm`. */
function isoWithOffset(epochMs: number, offsetMinutes: number): string {
  const local = new Date(epochMs + offsetMinutes * 60_000).toISOString().slice(0, 23);
  const sign = offsetMinutes < 0 ? "-" : "+";
  const abs = Math.abs(offsetMinutes);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
}
