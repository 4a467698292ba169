/**
 * @timer-service/client against a real nats-server and the real service (the built dist/main.js,
 * as the integration tests run it). Every event the client hands to a handler is also checked
 * against the published schema.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../../../test/support/nats-server.js";
import { TimerServiceProcess } from "../../../test/support/timer-service-process.js";
import { expectSchemaValid } from "../../../test/support/message-schemas.js";
import { connectTimerClient, type TimerClient, TimerClientError, type TimerEvent } from "../src/index.js";

let nats: NatsServerProcess;
let service: TimerServiceProcess;
let tenantCount = 0;
const clients: TimerClient[] = [];

async function client(label: string): Promise<TimerClient> {
  const c = await connectTimerClient({ servers: nats.url, tenantId: `${label}-${process.pid}-${++tenantCount}` });
  clients.push(c);
  return c;
}

/** Collects a consumer's events (schema-checked) and lets a test wait for one. */
function collector() {
  const events: TimerEvent[] = [];
  const waiters: { match: (e: TimerEvent) => boolean; resolve: (e: TimerEvent) => void }[] = [];
  return {
    events,
    handle(event: TimerEvent) {
      const { headers: _h, subject: _s, deliveryCount: _d, ...envelope } = event;
      expectSchemaValid(envelope);
      events.push(event);
      for (const w of waiters.splice(0)) {
        if (w.match(event)) w.resolve(event);
        else waiters.push(w);
      }
    },
    waitFor(match: (e: TimerEvent) => boolean, timeoutMs = 20_000): Promise<TimerEvent> {
      const found = events.find(match);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("no matching event in time")), timeoutMs);
        waiters.push({ match, resolve: (e) => (clearTimeout(timer), resolve(e)) });
      });
    },
  };
}

async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (ok(value) || Date.now() > end) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  nats = await NatsServerProcess.start();
  service = await TimerServiceProcess.start(nats.url, { TIMER_POLLING_INTERVAL: "200" });
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await service?.dispose();
  await nats?.dispose();
});

describe("@timer-service/client against the service", () => {
  it("when a timer is scheduled, then consume hands over its DueTimeReached with headers, and get shows it Reached", async () => {
    const timers = await client("due");
    const seen = collector();
    const sub = await timers.consume({ durable: "due-test", kinds: ["due"] }, (e) => seen.handle(e));
    const { commandId, duplicate, command, subject, stream, seq } = await timers.schedule({
      serviceCallId: "order-1",
      dueAt: new Date(Date.now() + 300),
      data: { orderId: 1 },
      correlationId: "req-1",
    });
    expect(commandId).toMatch(/^[0-9a-f]{32}$/); // 128 random bits: an unguessable Nats-Msg-Id
    expect(duplicate).toBe(false);
    expect(command).toMatchObject({
      id: commandId,
      type: "ScheduleTimer",
      correlationId: "req-1",
      payload: { tenantId: timers.tenantId, serviceCallId: "order-1", data: { orderId: 1 } },
    });
    expect([subject, stream, seq > 0]).toEqual([`timer.commands.schedule.${timers.tenantId}`, "TIMER_COMMANDS", true]);
    const event = await seen.waitFor((e) => e.payload.serviceCallId === "order-1");
    expect(event.type).toBe("DueTimeReached");
    expect(event.correlationId).toBe("req-1");
    expect(event.type === "DueTimeReached" && event.payload.data).toEqual({ orderId: 1 });
    expect(event.headers["Nats-Msg-Id"]).toBe(event.id);
    expect(event.deliveryCount).toBe(1);
    const timer = await until(
      () => timers.get("order-1"),
      (t) => t?.state === "Reached",
    );
    expect(timer).toMatchObject({ tenantId: timers.tenantId, serviceCallId: "order-1", state: "Reached", generation: 1 });
    await sub.stop();
  });

  it("when the same command id is sent twice, then the stream keeps one (duplicate: true)", async () => {
    const timers = await client("dup");
    await timers.cancel("x", { id: "fixed-id-1" });
    expect((await timers.cancel("x", { id: "fixed-id-1" })).duplicate).toBe(true);
  });

  it("when a timer is cancelled or cancelled by prefix, then it never fires and get shows Cancelled", async () => {
    const timers = await client("cancel");
    const far = new Date(Date.now() + 3_600_000);
    await timers.schedule({ serviceCallId: "a", dueAt: far });
    await timers.schedule({ serviceCallId: "order-7:1", dueAt: far });
    await timers.schedule({ serviceCallId: "order-7:2", dueAt: far });
    await timers.schedule({ serviceCallId: "order-8:1", dueAt: far });
    await until(
      () => timers.stats(),
      (s) => s.scheduled === 4,
    );
    await timers.cancel("a");
    await timers.cancelByPrefix("order-7:");
    const stats = await until(
      () => timers.stats(),
      (s) => s.cancelled === 3,
    );
    expect(stats).toMatchObject({ tenantId: timers.tenantId, scheduled: 1, cancelled: 3 });
    expect((await timers.get("a"))?.state).toBe("Cancelled");
    expect((await timers.get("order-7:2"))?.state).toBe("Cancelled");
    expect((await timers.get("order-8:1"))?.state).toBe("Scheduled");
    expect(await timers.get("never-scheduled")).toBeNull();
  });

  it("when list is paged, then every timer comes once, in dueAt order, and the last page has no cursor", async () => {
    const timers = await client("list");
    const base = Date.now() + 3_600_000;
    for (let i = 0; i < 5; i++) await timers.schedule({ serviceCallId: `job-${i}`, dueAt: new Date(base + (5 - i) * 1000) });
    await until(
      () => timers.stats(),
      (s) => s.scheduled === 5,
    );
    const ids: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await timers.list({ state: "Scheduled", limit: 2, ...(cursor === undefined ? {} : { cursor }) });
      expect(page.timers.length).toBeLessThanOrEqual(2);
      ids.push(...page.timers.map((t) => t.serviceCallId));
      cursor = page.nextCursor ?? undefined;
      pages++;
    } while (cursor !== undefined && pages < 10);
    expect(ids).toEqual(["job-4", "job-3", "job-2", "job-1", "job-0"]);
    expect(pages).toBe(3);
    const window = await timers.list({ dueAfter: new Date(base + 2000), dueBefore: new Date(base + 4000) });
    expect(window.timers.map((t) => t.serviceCallId)).toEqual(["job-3", "job-2"]);
  });

  it("when a tracked timer's work fails and then completes, then the event comes again and the timer ends Completed", async () => {
    const timers = await client("track");
    const seen = collector();
    const sub = await timers.consume({ durable: "worker" }, async (event) => {
      seen.handle(event);
      if (event.type !== "DueTimeReached") return;
      if ((event.payload.attempt ?? 1) === 1) await timers.fail(event.payload.serviceCallId, "downstream 503");
      else await timers.complete(event.payload.serviceCallId, "ok");
    });
    await timers.schedule({
      serviceCallId: "invoice-1",
      dueAt: new Date(),
      delivery: { maxRetries: 2, backoffMs: 100 },
      createdBy: "billing",
    });
    const second = await seen.waitFor((e) => e.type === "DueTimeReached" && e.payload.attempt === 2);
    expect(second.id).toMatch(/:2$/);
    const timer = await until(
      () => timers.get("invoice-1"),
      (t) => t?.state === "Completed",
    );
    expect(timer).toMatchObject({ state: "Completed", result: "ok", attempt: 2, createdBy: "billing" });
    await sub.stop();
  });

  it("when a timer has Failed and is retried, then the RetryTimer is stored and (once the service takes it) the timer fires again", async () => {
    const timers = await client("retry");
    const seen = collector();
    const sub = await timers.consume({ durable: "retrier" }, async (event) => {
      seen.handle(event);
      if (event.type === "DueTimeReached" && event.payload.generation === 1) await timers.fail("job", "no");
    });
    await timers.schedule({ serviceCallId: "job", dueAt: new Date(), delivery: { maxRetries: 0 } });
    await until(
      () => timers.get("job"),
      (t) => t?.state === "Failed",
    );
    expect((await timers.get("job"))?.state).toBe("Failed");
    const { commandId } = await timers.retry("job");
    // The commands stream is a work queue: the service takes the command out of it. A service that
    // knows RetryTimer re-arms the timer (generation 2, fires again); an older one rejects the
    // command it received (UNKNOWN_TYPE, echoing its id).
    const jsm = await jetstreamManager(timers.connection);
    const rejection = async () => {
      const m = await jsm.streams
        .getMessage("TIMER_EVENTS", { last_by_subj: `timer.events.rejected.${timers.tenantId}` })
        .catch(() => null);
      return m?.json<{ payload: { code: string; commandId?: string } }>() ?? null;
    };
    const outcome = await until(
      async () => ({ timer: await timers.get("job"), rejected: await rejection() }),
      (o) => o.timer?.generation === 2 || o.rejected?.payload.commandId === commandId,
    );
    if (outcome.timer?.generation === 2) {
      const again = await seen.waitFor((e) => e.type === "DueTimeReached" && e.payload.generation === 2);
      expect(again.payload.serviceCallId).toBe("job");
    } else {
      expect(outcome.rejected?.payload).toMatchObject({ code: "UNKNOWN_TYPE", commandId });
      expect(outcome.timer?.state).toBe("Failed");
    }
    await sub.stop();
  });

  it("when an occurrence is later than maxLatenessMs, then consume of kind missed hands over a DueTimeMissed", async () => {
    const timers = await client("missed");
    const seen = collector();
    const sub = await timers.consume({ durable: "missed-only", kinds: ["missed"] }, (e) => seen.handle(e));
    await timers.schedule({ serviceCallId: "late", dueAt: new Date(Date.now() - 60_000), maxLatenessMs: 0, data: [1, "two"] });
    const event = await seen.waitFor((e) => e.payload.serviceCallId === "late");
    expect(event.type).toBe("DueTimeMissed");
    expect(event.payload).toMatchObject({ data: [1, "two"], generation: 1 });
    // The event goes out before the timer is marked (at-least-once): wait for the mark.
    const marked = await until(
      () => timers.get("late"),
      (timer) => timer?.state === "Missed",
    );
    expect(marked?.state).toBe("Missed");
    await sub.stop();
  });

  it("when a consumer is removed, then the broker no longer keeps it, and removing it again says there was none", async () => {
    const timers = await client("removed");
    const sub = await timers.consume({ durable: "short-lived" }, () => undefined);
    await sub.stop();
    const jsm = await jetstreamManager(timers.connection);
    expect((await jsm.consumers.info("TIMER_EVENTS", "short-lived")).name).toBe("short-lived");
    expect(await timers.removeConsumer("short-lived")).toBe(true);
    await expect(jsm.consumers.info("TIMER_EVENTS", "short-lived")).rejects.toThrow(/consumer not found/i);
    expect(await timers.removeConsumer("short-lived")).toBe(false);
  });

  it("when a malformed command reaches the service, then its CommandRejected matches the published schema", async () => {
    const timers = await client("rejected");
    const js = jetstream(timers.connection);
    await js.publish(
      `timer.commands.schedule.${timers.tenantId}`,
      JSON.stringify({ id: "bad-1", type: "ScheduleTimer", tenantId: timers.tenantId, timestampMs: 1, payload: { serviceCallId: "x" } }),
    );
    const jsm = await jetstreamManager(timers.connection);
    const stored = await until(
      () => jsm.streams.getMessage("TIMER_EVENTS", { last_by_subj: `timer.events.rejected.${timers.tenantId}` }).catch(() => null),
      (m) => m !== null,
    );
    const rejected = stored!.json<Record<string, unknown>>();
    expectSchemaValid(rejected);
    expect(rejected).toMatchObject({ type: "CommandRejected", payload: { code: "INVALID_FIELD", commandId: "bad-1", serviceCallId: "x" } });
  });

  it("when the handler throws, then the event is redelivered after the nak delay and handled again", async () => {
    const timers = await client("nak");
    const deliveries: number[] = [];
    const sub = await timers.consume({ durable: "flaky", kinds: ["due"], nakDelayMs: 200 }, (event) => {
      deliveries.push(event.deliveryCount);
      if (event.deliveryCount < 3) throw new Error("not yet");
    });
    const started = Date.now();
    await timers.schedule({ serviceCallId: "flaky-1", dueAt: new Date() });
    await until(
      async () => deliveries.length,
      (n) => n >= 3,
    );
    expect(deliveries).toEqual([1, 2, 3]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(200 + 400);
    await new Promise((r) => setTimeout(r, 1000));
    expect(deliveries).toHaveLength(3);
    await sub.stop();
  });

  it("when the server redelivers an event while its handler still runs, then the handler is not called for the copy", async () => {
    const timers = await client("dedupe");
    const calls: TimerEvent[] = [];
    const sub = await timers.consume({ durable: "slow", kinds: ["due"], ackWaitMs: 1000 }, async (event) => {
      calls.push(event);
      await new Promise((r) => setTimeout(r, 2500));
    });
    await timers.schedule({ serviceCallId: "slow-1", dueAt: new Date() });
    await until(
      async () => calls.length,
      (n) => n >= 1,
    );
    await new Promise((r) => setTimeout(r, 4000));
    expect(calls).toHaveLength(1);
    const info = await (await jetstreamManager(timers.connection)).consumers.info("TIMER_EVENTS", "slow");
    expect(info.num_ack_pending).toBe(0);
    expect(info.delivered.consumer_seq).toBeGreaterThanOrEqual(2); // the copy was delivered, and acked unhandled
    await sub.stop();
  });

  it("when input is invalid, then the call throws INVALID_INPUT and nothing is published", async () => {
    const timers = await client("invalid");
    const jsm = await jetstreamManager(timers.connection);
    const before = (await jsm.streams.info("TIMER_COMMANDS")).state.last_seq;
    const attempts: (() => Promise<unknown>)[] = [
      () => timers.schedule({ serviceCallId: "x", dueAt: "2026-01-01T00:00:00" }),
      () => timers.schedule({ serviceCallId: "", dueAt: new Date() }),
      () => timers.schedule({ serviceCallId: "x", dueAt: new Date(Number.NaN) }),
      () => timers.schedule({ serviceCallId: "x", dueAt: new Date(), repeat: { everyMs: 10 } }),
      () => timers.schedule({ serviceCallId: "x", dueAt: new Date(), data: "x".repeat(20_000) }),
      () => timers.schedule({ serviceCallId: "x", dueAt: new Date(), delivery: { maxRetries: 1 }, repeat: { everyMs: 1000 } }),
      () => timers.cancel("bad\u0000id"),
      () => timers.fail("x", ""),
      () => timers.list({ limit: 0 }),
      () => timers.list({ unknownFilter: 1 }),
    ];
    for (const attempt of attempts) {
      const error = await attempt().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(TimerClientError);
      expect((error as TimerClientError).code).toBe("INVALID_INPUT");
    }
    await expect(connectTimerClient({ servers: nats.url, tenantId: "_unknown" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(timers.list({ state: "Sleeping" as never })).rejects.toMatchObject({
      detail: expect.stringMatching(/^\/state: must be one of /),
    });
    expect((await jsm.streams.info("TIMER_COMMANDS")).state.last_seq).toBe(before);
  });

  it("when the service refuses a query the schemas let through, then INVALID_REQUEST with its status and message", async () => {
    const timers = await client("refused");
    // The schema allows any cursor of these characters; only the service can tell it is none of its own.
    const error = await timers.list({ cursor: "not-a-cursor-of-the-service" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ name: "TimerClientError", code: "INVALID_REQUEST", status: 400 });
    expect((error as TimerClientError).detail).toMatch(/cursor/);
  });

  it("when nothing answers in time or nobody listens, then TIMEOUT and NO_RESPONDERS", async () => {
    const nc = await connect({ servers: nats.url });
    const timers = await connectTimerClient({ nc, tenantId: "silent", subjectPrefix: "quiet", timeoutMs: 300 });
    const sub = nc.subscribe("quiet.query.get.silent"); // receives, never answers
    const server = `nats://127.0.0.1:${nats.port}`;
    await expect(timers.get("x")).rejects.toMatchObject({
      name: "TimerClientError",
      code: "TIMEOUT",
      detail: `no answer in time on quiet.query.get.silent at ${server} (is the timer service running there?)`,
    });
    sub.unsubscribe();
    // No stream captures quiet.commands.>.
    await expect(timers.cancel("x")).rejects.toMatchObject({
      code: "NO_RESPONDERS",
      detail: expect.stringContaining(
        `no stream stores quiet.commands.cancel.silent: the timer service has not created its streams on ${server} yet`,
      ),
    });
    await timers.close();
    expect(nc.isClosed()).toBe(false); // a connection passed in stays the caller's
    await nc.close();
  });

  it("when a client on the caller's connection closes, then it leaves no listener or subscription on that connection", async () => {
    const nc = await connect({ servers: nats.url });
    // nats.js internals: the status listeners and the subscriptions the connection dispatches to,
    // but for the one inbox every request on the connection shares (the connection's, not the client's).
    const held = (): [number, string[]] => {
      const { protocol } = nc as unknown as { protocol: { listeners: unknown[]; subscriptions: { all(): { subject: string }[] } } };
      return [
        protocol.listeners.length,
        protocol.subscriptions
          .all()
          .map((s) => s.subject)
          .filter((s) => !s.startsWith("_INBOX.")),
      ];
    };
    const before = held();
    const timers = await connectTimerClient({ nc, tenantId: "borrower" });
    await timers.schedule({ serviceCallId: "b-1", dueAt: "2030-01-01T00:00:00Z", confirm: true });
    expect(held()).not.toEqual(before);
    await timers.close();
    expect(held()).toEqual(before);
    expect(nc.isClosed()).toBe(false);
    await nc.close();
  });

  it("when the client is closed, then its consumers stop, its connection closes and calls throw CLOSED", async () => {
    const timers = await connectTimerClient({ servers: nats.url, tenantId: "closing" });
    const sub = await timers.consume({ durable: "closing" }, () => undefined);
    await timers.close();
    await sub.stop();
    expect(timers.connection.isClosed()).toBe(true);
    await expect(timers.cancel("x")).rejects.toMatchObject({ code: "CLOSED" });
  });
});
