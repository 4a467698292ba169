/**
 * What a client user sees when something is off (CONTRACT §17): rejections through consume, errors
 * that name the member and a valid value, the server URL, and a broker the service never ran on.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../../../test/support/nats-server.js";
import { TimerServiceProcess } from "../../../test/support/timer-service-process.js";
import { freePort } from "../../../test/support/free-port.js";
import { connectTimerClient, type TimerClient, type TimerEvent } from "../src/index.js";

let nats: NatsServerProcess;
let service: TimerServiceProcess;
const clients: TimerClient[] = [];

async function client(tenantId: string): Promise<TimerClient> {
  const c = await connectTimerClient({ servers: nats.url, tenantId: `${tenantId}-${process.pid}` });
  clients.push(c);
  return c;
}

const messageOf = (promise: Promise<unknown>): Promise<string> =>
  promise.then(
    () => "resolved",
    (error: unknown) => (error as Error).message,
  );

beforeAll(async () => {
  nats = await NatsServerProcess.start();
  service = await TimerServiceProcess.start(nats.url, { TIMER_POLLING_INTERVAL: "200" });
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await service?.dispose();
  await nats?.dispose();
});

describe("what a client user sees (CONTRACT §17)", () => {
  it("when a fired serviceCallId is scheduled again, then consume of kind rejected hands over TIMER_FINAL", async () => {
    const timers = await client("final");
    const events: TimerEvent[] = [];
    let resolveRejected!: (e: TimerEvent) => void;
    const rejected = new Promise<TimerEvent>((r) => (resolveRejected = r));
    let resolveDue!: () => void;
    const due = new Promise<void>((r) => (resolveDue = r));
    const sub = await timers.consume({ durable: "outcomes", kinds: ["due", "rejected"] }, (event) => {
      events.push(event);
      if (event.type === "CommandRejected") resolveRejected(event);
      else resolveDue();
    });
    await timers.schedule({ serviceCallId: "order-1", dueAt: new Date() });
    await due;
    const again = await timers.schedule({ serviceCallId: "order-1", dueAt: new Date() });
    const event = await rejected;

    expect(event.type === "CommandRejected" && event.payload).toMatchObject({
      code: "TIMER_FINAL",
      commandId: again.commandId,
      serviceCallId: "order-1",
      reason: expect.stringMatching(/is Reached since .*a new serviceCallId/),
    });
    expect(events.filter((e) => e.type === "DueTimeReached")).toHaveLength(1);
    await sub.stop();
  });

  it("when a cron rule or a time zone is invalid, then schedule throws before sending, naming the member and a valid value", async () => {
    const timers = await client("cron");
    expect(await messageOf(timers.schedule({ serviceCallId: "c", dueAt: new Date(), repeat: { cron: "every monday" } }))).toBe(
      'ScheduleTimer /payload/repeat/cron: needs 5 fields: minute hour day-of-month month day-of-week; a valid value is 5 fields "minute hour day-of-month month day-of-week", e.g. "0 9 * * 1-5" (09:00 on weekdays)',
    );
    expect(await messageOf(timers.schedule({ serviceCallId: "c", dueAt: new Date(), repeat: { cron: "61 * * * *" } }))).toMatch(
      /^ScheduleTimer \/payload\/repeat\/cron: Invalid value for minute: 61; a valid value is 5 fields/,
    );
    expect(
      await messageOf(timers.schedule({ serviceCallId: "c", dueAt: new Date(), repeat: { cron: "0 9 * * *", timezone: "Berlin" } })),
    ).toBe(
      'ScheduleTimer /payload/repeat/timezone: "Berlin" is not an IANA time zone; a valid value is an IANA time zone, e.g. "Europe/Berlin" or "UTC"',
    );
  });

  it("when a member is missing or malformed, then the error says it is required or what a valid value looks like", async () => {
    const timers = await client("texts");
    expect(await messageOf(timers.schedule({ serviceCallId: "x", dueAt: "2026-01-01T09:00:00" }))).toBe(
      'ScheduleTimer /payload/dueAt: "2026-01-01T09:00:00" is not a date-time: it has no offset (Z or ±hh:mm); a valid value is an ISO 8601 date-time with an offset (Z or ±hh:mm), e.g. 2026-03-01T09:00:00Z or 2026-03-01T10:00:00+01:00',
    );
    expect(await messageOf(timers.schedule({ dueAt: new Date() } as never))).toBe("ScheduleTimer /payload/serviceCallId: is required");
    expect(await messageOf(connectTimerClient({ servers: nats.url } as never))).toBe(
      'tenantId is required: a tenant id is 1 to 64 letters, digits, "_" or "-", starting with a letter or digit, e.g. "acme"',
    );
    expect(await messageOf(timers.consume({ durable: "d", kinds: ["late" as never] }, () => undefined))).toBe(
      'kinds must be a non-empty list of "due", "missed", "rejected", e.g. ["due", "missed"]',
    );
  });

  it("when nothing listens at the server URL, then the connection error names it", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    expect(await messageOf(connectTimerClient({ servers: url, tenantId: "acme", reconnect: false }))).toMatch(
      new RegExp(`^connecting to NATS at ${url}: `),
    );
  });

  it("when the service never ran on the broker, then a command says its streams are not created yet", async () => {
    const bare = await NatsServerProcess.start();
    try {
      const timers = await connectTimerClient({ servers: bare.url, tenantId: "acme" });
      expect(await messageOf(timers.schedule({ serviceCallId: "x", dueAt: new Date() }))).toBe(
        `publishing ScheduleTimer: no stream stores timer.commands.schedule.acme: the timer service has not created its streams on nats://127.0.0.1:${bare.port} yet (start the service once, or check subjectPrefix "timer")`,
      );
      await timers.close();
    } finally {
      await bare.dispose();
    }
  });
});
