import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, headers as natsHeaders, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { NatsServerProcess } from "../support/nats-server.js";
import { repoRoot, startService, type RunningService } from "./ops-support.js";

// Runs deploy/nats/tenant-accounts.conf as shipped (NatsServerProcess adds -js -sd <temp dir>).
// The file reads the passwords from the server's environment, which the child inherits.
const passwords = {
  TIMER_SERVICE_NATS_PASSWORD: "service-secret",
  ACME_NATS_PASSWORD: "acme-secret",
  GLOBEX_NATS_PASSWORD: "globex-secret",
  TIMER_CLIENT_NATS_PASSWORD: "client-secret",
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
const singleAccountConfig = join(repoRoot, "deploy/nats/single-account.conf");
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
  return connect({ servers: url, user: "acme", pass: passwords.ACME_NATS_PASSWORD });
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

  it.each(["schedule", "cancel", "cancelprefix", "complete", "fail", "retry"])(
    "when acme publishes on its own %s subject with JetStream, then the command reaches TIMER_COMMANDS and the ack comes back",
    async (kind) => {
      const ack = await jetstream(acme).publish(`timer.commands.${kind}.acme`, scheduleTimer("acme"));

      expect(ack.stream).toBe("TIMER_COMMANDS");
    },
  );

  it("when acme publishes on a command subject of another kind, then the server refuses it (only the contract's six kinds are imported)", async () => {
    const error = await acme.request("timer.commands.other.acme", "{}", { timeout: 2_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(String(error)).toMatch(/no responders/i);
  });

  it("when acme sends a query on its own subject, then a responder in the service's account answers it; globex's query subject is refused", async () => {
    const responder = service.subscribe("timer.query.>", { callback: (_error, msg) => void msg.respond(`answer to ${msg.subject}`) });
    await service.flush();
    try {
      const answer = await acme.request("timer.query.stats.acme", "{}", { timeout: 2_000 });
      const refused = await acme.request("timer.query.stats.globex", "{}", { timeout: 2_000 }).then(
        () => undefined,
        (e: unknown) => e,
      );

      expect(answer.string()).toBe("answer to timer.query.stats.acme");
      expect(String(refused)).toMatch(/permissions violation for publish to "timer\.query\.stats\.globex"/i);
    } finally {
      responder.unsubscribe();
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

  it("when acme subscribes to globex's outcomes, then the server closes the subscription with a permissions violation", async () => {
    const sub = acme.subscribe("timer.outcomes.globex");

    const closedWith = await closedWithin(sub.closed, 5_000);

    expect(String(closedWith)).toMatch(/permissions violation for subscription to "timer\.outcomes\.globex"/i);
  });

  it("when the service publishes outcomes for acme and globex, then acme receives its own and never globex's", async () => {
    const sub = acme.subscribe("timer.outcomes.acme", { max: 2 });
    await acme.flush();

    service.publish("timer.outcomes.globex", '{"type":"CommandOutcome","commandId":"globex-1"}');
    service.publish("timer.outcomes.acme", '{"type":"CommandOutcome","commandId":"acme-1"}');
    service.publish("timer.outcomes.acme", '{"type":"CommandOutcome","commandId":"acme-2"}');
    const received: string[] = [];
    for await (const msg of sub) received.push(msg.string()); // ends after `max` messages

    expect(received).toEqual(['{"type":"CommandOutcome","commandId":"acme-1"}', '{"type":"CommandOutcome","commandId":"acme-2"}']);
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

    expect(event, service!.logLines.slice(-20).join("\n")).toBeDefined();
    expect(JSON.parse(event!)).toMatchObject({
      type: "DueTimeReached",
      tenantId: "acme",
      payload: { tenantId: "acme", serviceCallId: "perm-call-1", dueAt: "2020-01-01T00:00:00.000Z" },
    });
  });

  it("when acme sends a command with Timer-Confirm: 1, then acme receives its CommandOutcome", async () => {
    const sub = acme!.subscribe("timer.outcomes.acme", { max: 1 });
    await acme!.flush();
    const headers = natsHeaders();
    headers.set("Timer-Confirm", "1");

    await jetstream(acme!).publish(
      "timer.commands.schedule.acme",
      JSON.stringify({
        id: "perm-confirm-1",
        type: "ScheduleTimer",
        tenantId: "acme",
        timestampMs: Date.now(),
        payload: { tenantId: "acme", serviceCallId: "perm-confirm-1", dueAt: new Date(Date.now() + 3_600_000).toISOString() },
      }),
      { headers },
    );
    const outcome = await nextText(sub);

    expect(outcome, service!.logLines.slice(-20).join("\n")).toBeDefined();
    expect(JSON.parse(outcome!)).toMatchObject({ type: "CommandOutcome", commandId: "perm-confirm-1", outcome: "applied" });
  });

  it("when acme sends an invalid command, then acme receives the CommandRejected", async () => {
    const sub = acme!.subscribe("timer.events.rejected.acme", { max: 1 });
    await acme!.flush();

    await jetstream(acme!).publish("timer.commands.schedule.acme", "not json");
    const event = await nextText(sub);

    expect(event, service!.logLines.slice(-20).join("\n")).toBeDefined();
    expect(JSON.parse(event!)).toMatchObject({ type: "CommandRejected", payload: { code: "INVALID_JSON" } });
  });
});

describe("deploy/nats/single-account.conf (trusted deployments), used by the real service", () => {
  let server: NatsServerProcess | undefined;
  let service: RunningService | undefined;
  let client: NatsConnection | undefined;

  beforeAll(async () => {
    server = await NatsServerProcess.start(["-c", singleAccountConfig]);
    service = await startService(server.url, {
      TIMER_NATS_USER: "timer-service",
      TIMER_NATS_PASSWORD: passwords.TIMER_SERVICE_NATS_PASSWORD,
      TIMER_POLLING_INTERVAL: "100",
    });
    client = await connect({ servers: server.url, user: "timer-client", pass: passwords.TIMER_CLIENT_NATS_PASSWORD });
  });

  afterAll(async () => {
    await client?.close();
    await service?.dispose();
    await server?.dispose();
  });

  it("when the trusted client schedules a due timer for any tenant, then it receives the DueTimeReached", async () => {
    const sub = client!.subscribe("timer.events.due.globex", { max: 1 });
    await client!.flush();

    await jetstream(client!).publish(
      "timer.commands.schedule.globex",
      JSON.stringify({ tenantId: "globex", serviceCallId: "single-1", dueAt: "2020-01-01T00:00:00Z" }),
    );
    const event = await nextText(sub);

    expect(event, service!.logLines.slice(-20).join("\n")).toBeDefined();
    expect(JSON.parse(event!)).toMatchObject({ type: "DueTimeReached", payload: { tenantId: "globex", serviceCallId: "single-1" } });
  });

  it("when the client calls the JetStream API, then it is refused", async () => {
    const error = await client!.request("$JS.API.STREAM.PURGE.TIMER_COMMANDS", undefined, { timeout: 2_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(String(error)).toMatch(/permissions violation for publish/i);
  });
});
