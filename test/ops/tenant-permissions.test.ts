import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { NatsServerProcess } from "../support/nats-server.js";
import { repoRoot, startService, type RunningService } from "./ops-support.js";

// Runs deploy/nats/tenant-accounts.conf as shipped (NatsServerProcess adds -js -sd <temp dir>).
// The file reads the passwords from the server's environment, which the child inherits.
const passwords = {
  TIMER_SERVICE_NATS_PASSWORD: "service-secret",
  ACME_NATS_PASSWORD: "acme-secret",
  GLOBEX_NATS_PASSWORD: "globex-secret",
} as const;

const encoder = new TextEncoder();

function scheduleTimer(tenantId: string): Uint8Array {
  return encoder.encode(
    JSON.stringify({
      id: `cmd-${tenantId}-1`,
      type: "ScheduleTimer",
      tenantId,
      timestampMs: Date.now(),
      payload: { tenantId, serviceCallId: "call-1", dueAt: "2099-01-01T00:00:00.000Z" },
    }),
  );
}

/** Resolves with the error a subscription was closed with, or undefined if it was not closed. */
async function closedWithin(closed: Promise<void | Error>, ms: number): Promise<void | Error | "open"> {
  return Promise.race([closed, new Promise<"open">((r) => setTimeout(() => r("open"), ms))]);
}

const tenantConfig = join(repoRoot, "deploy/nats/tenant-accounts.conf");
const saved: Record<string, string | undefined> = {};

beforeAll(() => {
  for (const [name, value] of Object.entries(passwords)) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
});

afterAll(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

function connectAcme(url: string): Promise<NatsConnection> {
  return connect({ servers: url, user: "acme", pass: passwords.ACME_NATS_PASSWORD, inboxPrefix: "_INBOX_acme" });
}

/** The next message of `sub` as text, or undefined when none arrives within 10 s. */
async function nextText(sub: Subscription): Promise<string | undefined> {
  const timeout = new Promise<undefined>((r) => setTimeout(() => r(undefined), 10_000));
  const next = (async () => {
    for await (const msg of sub) return msg.string();
    return undefined;
  })();
  return Promise.race([next, timeout]);
}

describe("deploy/nats/tenant-accounts.conf, used by clients", () => {
  let server: NatsServerProcess;
  let service: NatsConnection;
  let acme: NatsConnection;

  beforeAll(async () => {
    server = await NatsServerProcess.start(["-c", tenantConfig]);
    service = await connect({ servers: server.url, user: "timer-service", pass: passwords.TIMER_SERVICE_NATS_PASSWORD });
    acme = await connectAcme(server.url);
    const jsm = await jetstreamManager(service);
    await jsm.streams.add({ name: "TIMER_COMMANDS", subjects: ["timer.commands.>"] });
    await jsm.streams.add({ name: "TIMER_EVENTS", subjects: ["timer.events.>"] });
  });

  afterAll(async () => {
    await acme?.close();
    await service?.close();
    await server?.dispose();
  });

  it("when acme publishes a ScheduleTimer for its own tenant with JetStream, then the stream acks it", async () => {
    const ack = await jetstream(acme).publish("timer.commands.schedule.acme", scheduleTimer("acme"));

    expect(ack.stream).toBe("TIMER_COMMANDS");
    expect(ack.duplicate).toBe(false);
  });

  it("when acme connects without its own inbox prefix, then its JetStream publish fails though the command is stored (the ack cannot reach it)", async () => {
    const careless = await connect({ servers: server.url, user: "acme", pass: passwords.ACME_NATS_PASSWORD });
    const jsm = await jetstreamManager(service);
    const before = (await jsm.streams.info("TIMER_COMMANDS")).state.messages;
    try {
      const error = await jetstream(careless, { timeout: 2_000 })
        .publish("timer.commands.schedule.acme", scheduleTimer("acme"))
        .then(
          () => undefined,
          (e: unknown) => e,
        );

      expect(String(error)).toMatch(/permissions violation for subscription to "_INBOX\./i);
      // The publish itself was allowed: the command is stored, only its ack was lost.
      expect((await jsm.streams.info("TIMER_COMMANDS")).state.messages).toBe(before + 1);
    } finally {
      await careless.close();
    }
  });

  it("when acme publishes to globex's command subject, then the server refuses it and the stream never sees it", async () => {
    const jsm = await jetstreamManager(service);
    const before = (await jsm.streams.info("TIMER_COMMANDS")).state.messages;

    const error = await jetstream(acme, { timeout: 2_000 })
      .publish("timer.commands.schedule.globex", scheduleTimer("globex"))
      .then(
        () => undefined,
        (e: unknown) => e,
      );

    expect(String(error)).toMatch(/permissions violation for publish to "timer\.commands\.schedule\.globex"/i);
    expect((await jsm.streams.info("TIMER_COMMANDS")).state.messages).toBe(before);
  });

  it("when acme subscribes to globex's events, then the server closes the subscription with a permissions violation", async () => {
    const sub = acme.subscribe("timer.events.due.globex");

    const closedWith = await closedWithin(sub.closed, 5_000);

    expect(String(closedWith)).toMatch(/permissions violation for subscription to "timer\.events\.due\.globex"/i);
  });

  it("when acme subscribes to its own events, then it receives the DueTimeReached the service publishes", async () => {
    const sub = acme.subscribe("timer.events.due.acme", { max: 1 });
    await acme.flush(); // the server has the subscription before the service publishes

    const ack = await jetstream(service).publish("timer.events.due.acme", encoder.encode('{"type":"DueTimeReached"}'));
    const received = await nextText(sub);

    expect(ack.stream).toBe("TIMER_EVENTS");
    expect(received).toBe('{"type":"DueTimeReached"}');
  });

  it("when the service user pulls a command through a durable consumer, then it may ack it", async () => {
    const jsm = await jetstreamManager(service);
    await jsm.consumers.add("TIMER_COMMANDS", { durable_name: "timer-service", ack_policy: AckPolicy.Explicit });
    await jetstream(acme).publish("timer.commands.cancel.acme", encoder.encode('{"tenantId":"acme","serviceCallId":"c"}'));

    const consumer = await jetstream(service).consumers.get("TIMER_COMMANDS", "timer-service");
    const msg = await consumer.next({ expires: 2_000 });

    expect(msg?.subject).toMatch(/^timer\.commands\.(schedule|cancel)\.acme$/);
    expect(await msg?.ackAck()).toBe(true);
  });

  it("when acme asks the JetStream API for stream info, then it is refused (tenants cannot read the streams)", async () => {
    const error = await acme.request("$JS.API.STREAM.INFO.TIMER_EVENTS", undefined, { timeout: 2_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(String(error)).toMatch(/permissions violation for publish/i);
  });
});

describe("deploy/nats/tenant-accounts.conf, used by the real service", () => {
  let server: NatsServerProcess | undefined;
  let service: RunningService | undefined;
  let acme: NatsConnection | undefined;

  beforeAll(async () => {
    server = await NatsServerProcess.start(["-c", tenantConfig]);
    // No stream exists yet: the service creates both, its consumer, then consumes and publishes
    // with nothing but the timer-service user's permissions.
    service = await startService(server.url, {
      TIMER_NATS_USER: "timer-service",
      TIMER_NATS_PASSWORD: passwords.TIMER_SERVICE_NATS_PASSWORD,
      TIMER_POLLING_INTERVAL: "100",
    });
    acme = await connectAcme(server.url);
  });

  afterAll(async () => {
    await acme?.close();
    await service?.dispose();
    await server?.dispose();
  });

  it("when acme schedules a timer that is already due, then acme receives its DueTimeReached", async () => {
    const sub = acme!.subscribe("timer.events.due.acme", { max: 1 });
    await acme!.flush();

    await jetstream(acme!).publish(
      "timer.commands.schedule.acme",
      JSON.stringify({
        id: "perm-1",
        type: "ScheduleTimer",
        tenantId: "acme",
        timestampMs: Date.now(),
        payload: { tenantId: "acme", serviceCallId: "perm-call-1", dueAt: "2020-01-01T00:00:00Z" },
      }),
    );
    const event = await nextText(sub);

    expect(event, service!.child.describe()).toBeDefined();
    expect(JSON.parse(event!)).toMatchObject({
      type: "DueTimeReached",
      tenantId: "acme",
      payload: { tenantId: "acme", serviceCallId: "perm-call-1", dueAt: "2020-01-01T00:00:00.000Z" },
    });
  });

  it("when acme sends an invalid command, then acme receives the CommandRejected", async () => {
    const sub = acme!.subscribe("timer.events.rejected.acme", { max: 1 });
    await acme!.flush();

    await jetstream(acme!).publish("timer.commands.schedule.acme", "not json");
    const event = await nextText(sub);

    expect(event, service!.child.describe()).toBeDefined();
    expect(JSON.parse(event!)).toMatchObject({ type: "CommandRejected", payload: { code: "INVALID_JSON" } });
  });
});
