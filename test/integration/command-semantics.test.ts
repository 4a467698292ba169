import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient } from "../support/timer-client.js";
import {
  barrier,
  commandsSeries,
  deltas,
  eventsFor,
  eventually,
  expectNeverFired,
  fromNow,
  metricValue,
  scheduleEnvelope,
  settledMetrics,
  series,
  uniqueId,
} from "./integration-support.js";

const SCHEDULE_ACCEPTED = commandsSeries("ScheduleTimer", "accepted");
const SCHEDULE_IGNORED = commandsSeries("ScheduleTimer", "ignored");
const SCHEDULE_REJECTED = commandsSeries("ScheduleTimer", "rejected");
const CANCEL_ACCEPTED = commandsSeries("CancelTimer", "accepted");
const CANCEL_IGNORED = commandsSeries("CancelTimer", "ignored");
const CANCEL_REJECTED = commandsSeries("CancelTimer", "rejected");
const UNKNOWN_REJECTED = commandsSeries("unknown", "rejected");
const COMMAND_SERIES = [
  SCHEDULE_ACCEPTED,
  SCHEDULE_IGNORED,
  SCHEDULE_REJECTED,
  CANCEL_ACCEPTED,
  CANCEL_IGNORED,
  CANCEL_REJECTED,
  UNKNOWN_REJECTED,
];
const PENDING = "timer_schedules_pending";
const PROCESSED = "timer_schedules_processed_total";
const FIRE_LAG_COUNT = "timer_fire_lag_seconds_count";

/** CONTRACT §3: how ScheduleTimer and CancelTimer change a timer, observed through events and metrics. */
/**
 * How far ahead a timer is due that a cancel sent right after it must reach first: room for two
 * publishes and their processing on a loaded machine.
 */
const CANCEL_MARGIN_MS = 3_000;

describe("command semantics", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;
  let client: TimerClient;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url, { TIMER_POLLING_INTERVAL: "200" });
    client = await TimerClient.connect(nats.url);
  });

  afterAll(async () => {
    await client?.close();
    await service?.dispose();
    await nats?.dispose();
  });

  it("when a timer is rescheduled to a later dueAt, then it fires once, at the new time, with the new data and correlationId", async () => {
    const tenantId = "resched";
    const id = uniqueId("later");
    const ts = Date.now();
    const firstDueMs = Date.now() + 300;
    const secondDueMs = Date.now() + 900;
    await client.schedule(tenantId, id, new Date(firstDueMs), { data: { v: 1 }, correlationId: "c-1", timestampMs: ts });
    await client.schedule(tenantId, id, new Date(secondDueMs), { data: { v: 2 }, correlationId: "c-2", timestampMs: ts + 1 });

    const event = await client.waitForDue(tenantId, id);
    expect(event.body.payload.dueAt).toBe(new Date(secondDueMs).toISOString());
    // The second schedule changed the timer: generation 2.
    expect(event.body.id).toBe(`${tenantId}:${id}:${secondDueMs}:2`);
    expect(event.body.payload.generation).toBe(2);
    expect(event.body.payload.data).toEqual({ v: 2 });
    expect(event.body.correlationId).toBe("c-2");
    expect(event.receivedAtMs).toBeGreaterThanOrEqual(secondDueMs);

    await barrier(client);
    expect(eventsFor(client, "DueTimeReached", tenantId, id)).toHaveLength(1);
  });

  it("when a timer is rescheduled to an earlier dueAt, then it fires at the earlier time", async () => {
    const tenantId = "resched";
    const id = uniqueId("earlier");
    const ts = Date.now();
    await client.schedule(tenantId, id, fromNow(60_000), { timestampMs: ts });
    const earlierMs = Date.now() + 100;
    await client.schedule(tenantId, id, new Date(earlierMs), { timestampMs: ts + 1 });

    const event = await client.waitForDue(tenantId, id, 5_000);
    expect(event.body.payload.dueAt).toBe(new Date(earlierMs).toISOString());
  });

  it("when a command is older (timestampMs) than the last one applied, then it is ignored", async () => {
    const tenantId = "stale";
    const rescheduled = uniqueId("stale-schedule");
    const cancelled = uniqueId("stale-cancel");
    const ts = Date.now();
    const newDueMs = Date.now() + 600;
    const before = await settledMetrics(service, client);

    await client.schedule(tenantId, rescheduled, new Date(newDueMs), { data: { v: "new" }, correlationId: "new", timestampMs: ts });
    await client.schedule(tenantId, rescheduled, fromNow(0), { data: { v: "old" }, correlationId: "old", timestampMs: ts - 1_000 });
    await client.schedule(tenantId, cancelled, fromNow(300), { timestampMs: ts });
    await client.cancel(tenantId, cancelled, { timestampMs: ts - 1 });

    const fired = await client.waitForDue(tenantId, rescheduled);
    expect(fired.body.payload.dueAt).toBe(new Date(newDueMs).toISOString());
    expect(fired.body.payload.data).toEqual({ v: "new" });
    expect(fired.body.correlationId).toBe("new");
    await client.waitForDue(tenantId, cancelled);

    await barrier(client);
    expect(eventsFor(client, "DueTimeReached", tenantId, rescheduled)).toHaveLength(1);
    expect(eventsFor(client, "DueTimeReached", tenantId, cancelled)).toHaveLength(1);
    expect(deltas(before, await settledMetrics(service, client), COMMAND_SERIES)).toMatchObject({
      [SCHEDULE_ACCEPTED]: 3, // two timers + barrier
      [SCHEDULE_IGNORED]: 1,
      [CANCEL_IGNORED]: 1,
      [CANCEL_ACCEPTED]: 0,
    });
  });

  it("when a cancel and a schedule carry the same timestampMs, then the cancel wins in either order", async () => {
    const tenantId = "tie";
    const scheduleFirst = uniqueId("schedule-then-cancel");
    const cancelFirst = uniqueId("cancel-then-schedule");
    const ts = Date.now();
    const dueAt = fromNow(CANCEL_MARGIN_MS);
    const before = await settledMetrics(service, client);

    await client.schedule(tenantId, scheduleFirst, dueAt, { timestampMs: ts });
    await client.cancel(tenantId, scheduleFirst, { timestampMs: ts });
    await client.cancel(tenantId, cancelFirst, { timestampMs: ts });
    await client.schedule(tenantId, cancelFirst, dueAt, { timestampMs: ts });

    await barrier(client, "barrier", fromNow(CANCEL_MARGIN_MS + 300));
    expectNeverFired(client, tenantId, scheduleFirst, cancelFirst);
    expect(deltas(before, await settledMetrics(service, client), COMMAND_SERIES)).toMatchObject({
      [SCHEDULE_ACCEPTED]: 2, // scheduleFirst + barrier
      [SCHEDULE_IGNORED]: 1, // the schedule after the cancel with the same timestamp
      [CANCEL_ACCEPTED]: 2,
    });
  });

  it("when a scheduled timer is cancelled, then it never fires and is no longer pending", async () => {
    const tenantId = "cancel";
    const id = uniqueId("cancelled");
    const pendingBefore = (await settledMetrics(service, client)).get(PENDING);
    await client.schedule(tenantId, id, fromNow(CANCEL_MARGIN_MS));
    await client.cancel(tenantId, id);

    await barrier(client, "barrier", fromNow(CANCEL_MARGIN_MS + 300));
    expectNeverFired(client, tenantId, id);
    expect((await settledMetrics(service, client)).get(PENDING)).toBe(pendingBefore);
  });

  it("when a cancelled timer gets a newer schedule, then it is re-armed and fires with the new dueAt and data", async () => {
    const tenantId = "cancel";
    const id = uniqueId("rearm");
    const ts = Date.now();
    await client.schedule(tenantId, id, fromNow(200), { timestampMs: ts, data: { v: "first" } });
    await client.cancel(tenantId, id, { timestampMs: ts + 1 });
    const dueAt = fromNow(300);
    await client.schedule(tenantId, id, dueAt, { timestampMs: ts + 2, data: { v: "rearmed" }, correlationId: "rearm" });

    const event = await client.waitForDue(tenantId, id);
    expect(event.body.payload.dueAt).toBe(dueAt);
    expect(event.body.payload.data).toEqual({ v: "rearmed" });
    expect(event.body.correlationId).toBe("rearm");
    await barrier(client);
    expect(eventsFor(client, "DueTimeReached", tenantId, id)).toHaveLength(1);
  });

  it("when a bare payload is used, then its order is the broker's timestamp of the message", async () => {
    const tenantId = "bare-order";
    const survives = uniqueId("bare-survives");
    const cancelled = uniqueId("bare-cancelled");
    const dueAt = fromNow(300);
    const bare = (serviceCallId: string) => JSON.stringify({ tenantId, serviceCallId, dueAt });
    await client.publishRaw(`timer.commands.schedule.${tenantId}`, bare(survives));
    await client.publishRaw(`timer.commands.schedule.${tenantId}`, bare(cancelled));
    await client.cancel(tenantId, survives, { timestampMs: Date.now() - 60_000 }); // older than the broker's timestamp → stale
    await client.cancel(tenantId, cancelled, { timestampMs: Date.now() + 60_000 });
    // A bare cancel is newer than an envelope schedule stamped a minute ago.
    const bareCancelled = uniqueId("bare-cancel");
    await client.schedule(tenantId, bareCancelled, dueAt, { timestampMs: Date.now() - 60_000 });
    await client.publishRaw(`timer.commands.cancel.${tenantId}`, JSON.stringify({ tenantId, serviceCallId: bareCancelled }));

    await client.waitForDue(tenantId, survives);
    await barrier(client, "barrier", fromNow(300));
    expectNeverFired(client, tenantId, cancelled, bareCancelled);
  });

  it("when an unknown key is cancelled, then an older schedule does not create it, and a newer schedule re-arms it", async () => {
    const tenantId = "tombstone";
    const id = uniqueId("tomb");
    const ts = Date.now();
    await client.cancel(tenantId, id, { timestampMs: ts });
    await client.schedule(tenantId, id, fromNow(0), { timestampMs: ts - 1, data: { late: true } });

    await barrier(client, "barrier", fromNow(300));
    expectNeverFired(client, tenantId, id);

    const dueAt = fromNow(0);
    await client.schedule(tenantId, id, dueAt, { timestampMs: ts + 1, data: { rearmed: true } });
    const event = await client.waitForDue(tenantId, id);
    expect(event.body.payload.dueAt).toBe(dueAt);
    expect(event.body.payload.data).toEqual({ rearmed: true });
  });

  it("when a timer has fired, then a later schedule is rejected TIMER_FINAL, a cancel ignored, and no second event comes", async () => {
    const tenantId = "final";
    const id = uniqueId("reached");
    await client.schedule(tenantId, id, fromNow(0), { data: { round: 1 } });
    await client.waitForDue(tenantId, id);
    const before = await settledMetrics(service, client);

    await client.schedule(tenantId, id, fromNow(0), { data: { round: 2 } });
    await client.cancel(tenantId, id);
    await client.schedule(tenantId, id, fromNow(50), { data: { round: 3 } });

    await barrier(client, "barrier", fromNow(200));
    const events = eventsFor(client, "DueTimeReached", tenantId, id);
    expect(events).toHaveLength(1);
    expect(events[0]!.body.payload.data).toEqual({ round: 1 });
    expect(deltas(before, await settledMetrics(service, client), [...COMMAND_SERIES, PENDING])).toMatchObject({
      [SCHEDULE_REJECTED]: 2, // newer schedules of a fired timer (CONTRACT §17)
      [SCHEDULE_IGNORED]: 0,
      [CANCEL_IGNORED]: 1,
      [SCHEDULE_ACCEPTED]: 1, // the barrier
      [CANCEL_ACCEPTED]: 0,
      [PENDING]: 0,
    });
  });

  it("when the same command is delivered twice, then the second delivery changes nothing", async () => {
    const tenantId = "dup";
    const twice = uniqueId("twice");
    const afterCancel = uniqueId("after-cancel");
    const ts = Date.now();
    const before = await settledMetrics(service, client);

    // The same schedule twice: one timer, one event.
    const schedule = JSON.stringify(
      scheduleEnvelope(tenantId, twice, fromNow(CANCEL_MARGIN_MS), { timestampMs: ts, correlationId: "dup" }, { data: { n: 1 } }),
    );
    await client.publishRaw(`timer.commands.schedule.${tenantId}`, schedule);
    await client.publishRaw(`timer.commands.schedule.${tenantId}`, schedule);
    // A schedule redelivered after the cancel that followed it must not resurrect the timer.
    const resent = JSON.stringify(scheduleEnvelope(tenantId, afterCancel, fromNow(CANCEL_MARGIN_MS), { timestampMs: ts }));
    await client.publishRaw(`timer.commands.schedule.${tenantId}`, resent);
    await client.cancel(tenantId, afterCancel, { timestampMs: ts + 1, id: "cancel-dup" });
    await client.publishRaw(`timer.commands.schedule.${tenantId}`, resent);
    await client.cancel(tenantId, afterCancel, { timestampMs: ts + 1, id: "cancel-dup" });

    await client.waitForDue(tenantId, twice);
    await barrier(client, "barrier", fromNow(CANCEL_MARGIN_MS + 300));
    expect(eventsFor(client, "DueTimeReached", tenantId, twice)).toHaveLength(1);
    expectNeverFired(client, tenantId, afterCancel);
    expect(deltas(before, await settledMetrics(service, client), COMMAND_SERIES)).toMatchObject({
      [SCHEDULE_ACCEPTED]: 3, // twice, afterCancel, barrier
      [SCHEDULE_IGNORED]: 2,
      [CANCEL_ACCEPTED]: 1,
      [CANCEL_IGNORED]: 1,
    });
  });

  it("when two tenants use the same serviceCallId, then they are two timers and a cancel in one does not touch the other", async () => {
    const id = uniqueId("shared");
    const tenants = ["iso-a", "iso-b", "iso-c"];
    const dueAt = fromNow(300);
    for (const [i, tenantId] of tenants.entries()) await client.schedule(tenantId, id, dueAt, { data: { tenant: tenantId, i } });
    await client.cancel("iso-a", id);

    const b = await client.waitForDue("iso-b", id);
    const c = await client.waitForDue("iso-c", id);
    expect(b.subject).toBe("timer.events.due.iso-b");
    expect(c.subject).toBe("timer.events.due.iso-c");
    expect(b.body.id).not.toBe(c.body.id);
    expect(b.body.payload.data).toEqual({ tenant: "iso-b", i: 1 });
    expect(c.body.payload.data).toEqual({ tenant: "iso-c", i: 2 });

    await barrier(client, "barrier", fromNow(300));
    expectNeverFired(client, "iso-a", id);
    expect(eventsFor(client, "DueTimeReached", "iso-b", id)).toHaveLength(1);
    expect(eventsFor(client, "DueTimeReached", "iso-c", id)).toHaveLength(1);
  });

  it("when commands are accepted, ignored, rejected and timers fire, then the command, pending, processed and lag metrics move accordingly", async () => {
    const tenantId = "metrics";
    const ids = [uniqueId("m1"), uniqueId("m2"), uniqueId("m3")];
    const before = await settledMetrics(service, client);
    const pending0 = before.get(PENDING)!;
    expect(pending0).toBeDefined();

    const ts = Date.now();
    const dueAt = fromNow(1_200);
    for (const id of ids) await client.schedule(tenantId, id, dueAt, { timestampMs: ts });
    await eventually(async () => expect(await metricValue(service, PENDING)).toBe(pending0 + 3));

    await client.cancel(tenantId, ids[2]!, { timestampMs: ts + 1 });
    await client.schedule(tenantId, ids[0]!, dueAt, { timestampMs: ts - 1 }); // stale → ignored
    await eventually(async () => expect(await metricValue(service, PENDING)).toBe(pending0 + 2));

    await client.publishRaw(`timer.commands.schedule.${tenantId}`, "not json");
    await client.publishRaw(`timer.commands.cancel.${tenantId}`, "[]");
    await client.publishRaw(`timer.commands.foo.${tenantId}`, JSON.stringify(scheduleEnvelope(tenantId, uniqueId("foo"), dueAt)));
    await client.waitForRejection(`timer.commands.schedule.${tenantId}`);
    await client.waitForRejection(`timer.commands.cancel.${tenantId}`);
    await client.waitForRejection(`timer.commands.foo.${tenantId}`);

    await client.waitForDue(tenantId, ids[0]!);
    await client.waitForDue(tenantId, ids[1]!);
    await eventually(async () => {
      const after = await settledMetrics(service, client);
      expect(deltas(before, after, [...COMMAND_SERIES, PENDING, PROCESSED, FIRE_LAG_COUNT])).toEqual({
        [SCHEDULE_ACCEPTED]: 3,
        [SCHEDULE_IGNORED]: 1,
        [SCHEDULE_REJECTED]: 1,
        [CANCEL_ACCEPTED]: 1,
        [CANCEL_IGNORED]: 0,
        [CANCEL_REJECTED]: 1,
        [UNKNOWN_REJECTED]: 1,
        [PENDING]: 0,
        [PROCESSED]: 2,
        [FIRE_LAG_COUNT]: 2,
      });
      expect(after.get(series("timer_polling_duration_seconds_count"))).toBeGreaterThan(
        before.get("timer_polling_duration_seconds_count") ?? 0,
      );
      expect(after.get("timer_last_poll_timestamp_seconds")! * 1000).toBeGreaterThan(Date.now() - 5_000);
      expect(after.get(FIRE_LAG_COUNT)).toBeGreaterThan(0);
    });
    await barrier(client, "barrier", fromNow(300));
    expectNeverFired(client, tenantId, ids[2]!);
  });

  it("when 20 overdue timers with various dueAt are found at once (after a restart), then they fire oldest dueAt first", async () => {
    const tenantId = "order";
    const count = 20;
    const accepted0 = await metricValue(service, SCHEDULE_ACCEPTED);
    // Due 1.5–2 s from now in a shuffled order: stored now, overdue by the time the service is back.
    const base = Date.now() + 1_500;
    const ranks = shuffle([...Array(count).keys()]);
    const timers = ranks.map((rank) => ({ id: uniqueId(`order-${rank}`), dueAtMs: base + rank * 25 - (rank % 3) }));
    await Promise.all(timers.map((t) => client.schedule(tenantId, t.id, new Date(t.dueAtMs))));
    await eventually(async () => expect(await metricValue(service, SCHEDULE_ACCEPTED)).toBe(accepted0 + count));

    expect(await service.kill("SIGTERM")).toEqual({ code: 0, signal: null });
    const firedBeforeStop = client.received("DueTimeReached").filter((e) => e.body.tenantId === tenantId);
    expect(firedBeforeStop, "timers fired before the service stopped; the test needs more lead time").toEqual([]);
    const lastDueMs = Math.max(...timers.map((t) => t.dueAtMs));
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, lastDueMs + 20 - Date.now()))); // let all of them fall due
    await service.restart();

    await Promise.all(timers.map((t) => client.waitForDue(tenantId, t.id)));
    const arrival = client
      .received("DueTimeReached")
      .filter((e) => e.body.tenantId === tenantId)
      .map((e) => e.body.payload.serviceCallId);
    const byDueAt = [...timers].sort((a, b) => a.dueAtMs - b.dueAtMs).map((t) => t.id);
    expect(arrival).toEqual(byDueAt);
  });
});

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
