import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/transport-node";
import { AckPolicy, jetstream } from "@nats-io/jetstream";
import type { TimerServiceProcess } from "../support/timer-service-process.js";
import {
  DueEventCollector,
  exportTenantPasswords,
  scheduleTimer,
  scheduleTimers,
  startTenantStack,
  startTimerService,
  storedMessages,
  until,
  type TenantStack,
} from "./tenant-stack.js";

// A hostile tenant (acme) against deploy/nats/tenant-accounts.conf as shipped, with the real
// service. Every attack runs while globex has commands waiting in TIMER_COMMANDS and the service is
// stopped (as once happened, where one acme publish purged globex's waiting commands); afterwards
// the service starts and globex's timers must still fire.

/** JetStream acks right after storing; the API would act on a misdirected ack within ms. */
const SETTLE_MS = 300;
/** A consumer an operator made for globex's durable delivery (docs/security.md). */
const GLOBEX_CONSUMER = "globex-events";

let restoreEnv: () => void;
let stack: TenantStack;
let service: TimerServiceProcess;
let globexEvents: DueEventCollector;

beforeAll(async () => {
  restoreEnv = exportTenantPasswords();
  stack = await startTenantStack();
  service = await startTimerService(stack.server.url); // creates streams and consumer
  globexEvents = await DueEventCollector.start(stack.globex, "globex");
  // TIMER_EVENTS holds an event, so that a purge or delete of it would show.
  await globexEvents.fired(await scheduleTimers(stack.globex, "globex", "warm-up", 1, 0));
  await stack.jsm.consumers.add("TIMER_EVENTS", {
    durable_name: GLOBEX_CONSUMER,
    ack_policy: AckPolicy.Explicit,
    filter_subject: "timer.events.*.globex",
  });
  await service.kill("SIGTERM");
});

afterAll(async () => {
  globexEvents?.close();
  await service?.dispose();
  await stack?.dispose();
  restoreEnv?.();
});

/** What an attack on the streams would change. */
async function brokerState(): Promise<object> {
  const consumers = async (stream: string): Promise<string[]> => (await stack.jsm.consumers.list(stream).next()).map((c) => c.name).sort();
  const streams = (await stack.jsm.streams.list().next()).map((s) => s.config.name).sort();
  return {
    streams,
    commands: await storedMessages(stack.jsm, "TIMER_COMMANDS"),
    events: await storedMessages(stack.jsm, "TIMER_EVENTS"),
    commandConsumers: await consumers("TIMER_COMMANDS"),
    eventConsumers: await consumers("TIMER_EVENTS"),
  };
}

/**
 * Globex schedules three timers due in 1.5 s (the service is stopped, so they wait in the stream),
 * `attack` runs, then the service starts and every globex timer must fire.
 */
async function globexTimersSurvive(label: string, attack: () => Promise<void>): Promise<void> {
  const ids = await scheduleTimers(stack.globex, "globex", label, 3, 1_500);
  await attack();
  await service.restart();
  try {
    await globexEvents.fired(ids);
  } finally {
    await service.kill("SIGTERM");
  }
}

/** The error a request fails with, as text ("" when it succeeds). */
async function requestError(nc: NatsConnection, subject: string, body = ""): Promise<string> {
  return nc.request(subject, body, { timeout: 2_000 }).then(
    (reply) => `answered: ${reply.string()}`,
    (error: unknown) => String(error),
  );
}

describe("acme aims the publish ack of its own command at another target (reply-subject abuse)", () => {
  it.each([
    "$JS.API.STREAM.PURGE.TIMER_COMMANDS",
    "$JS.API.STREAM.PURGE.TIMER_EVENTS",
    "$JS.API.STREAM.DELETE.TIMER_COMMANDS",
    "$JS.API.STREAM.DELETE.TIMER_EVENTS",
    "$JS.API.STREAM.MSG.DELETE.TIMER_COMMANDS",
    "$JS.API.STREAM.MSG.DELETE.TIMER_EVENTS",
    "$JS.API.CONSUMER.DELETE.TIMER_COMMANDS.timer-service",
    `$JS.API.CONSUMER.DELETE.TIMER_EVENTS.${GLOBEX_CONSUMER}`,
    "timer.events.due.globex",
  ])("when the reply subject is %s, then streams, consumers and messages are untouched and globex's timers fire", async (target) => {
    await globexTimersSurvive(`reply-${target}`, async () => {
      const before = (await brokerState()) as { commands: number };

      stack.acme.publish("timer.commands.schedule.acme", scheduleTimer("acme", `attack-${target}`, 3_600_000), { reply: target });
      await until("acme's command stored", async () => (await storedMessages(stack.jsm, "TIMER_COMMANDS")) >= before.commands + 1);
      await new Promise((r) => setTimeout(r, SETTLE_MS));

      expect(await brokerState()).toEqual({ ...before, commands: before.commands + 1 });
    });
    expect(globexEvents.raw.filter((text) => text.includes('"stream"'))).toEqual([]); // no ack reached globex
  });
});

describe("de-duplication across tenants", () => {
  it("when globex sends a command with the Nats-Msg-Id acme used a second earlier, then the stream stores it and globex's timer fires", async () => {
    const sharedMsgId = "order-4711";
    await scheduleTimers(stack.acme, "acme", "dedup-acme", 1, 3_600_000, sharedMsgId);
    // Inside the old 2-minute window, well past the commands stream's 100 ms one.
    await new Promise((r) => setTimeout(r, 1_000));

    // scheduleTimers throws when the stream acks it as a duplicate.
    const ids = await scheduleTimers(stack.globex, "globex", "dedup-globex", 1, 1_500, sharedMsgId);
    await service.restart();
    try {
      await globexEvents.fired(ids);
    } finally {
      await service.kill("SIGTERM");
    }
  });

  it("when the service creates TIMER_COMMANDS, then its duplicate window is the 100 ms minimum (0 would mean 2 minutes)", async () => {
    expect((await stack.jsm.streams.info("TIMER_COMMANDS")).config.duplicate_window).toBe(100_000_000);
  });
});

describe("direct attempts by acme", () => {
  it("when acme publishes a command on globex's subject, then the server refuses it and globex's timers fire", async () => {
    await globexTimersSurvive("direct-command", async () => {
      const before = await storedMessages(stack.jsm, "TIMER_COMMANDS");
      const error = await jetstream(stack.acme, { timeout: 2_000 })
        .publish("timer.commands.cancel.globex", JSON.stringify({ tenantId: "globex", serviceCallId: "direct-command-1" }))
        .then(
          () => "stored",
          (e: unknown) => String(e),
        );

      expect(error).toMatch(/permissions violation for publish to "timer\.commands\.cancel\.globex"/i);
      expect(await storedMessages(stack.jsm, "TIMER_COMMANDS")).toBe(before);
    });
  });

  it.each([
    "$JS.API.STREAM.PURGE.TIMER_COMMANDS",
    "$JS.API.STREAM.DELETE.TIMER_EVENTS",
    "$JS.API.CONSUMER.DELETE.TIMER_COMMANDS.timer-service",
    "$JS.API.INFO",
  ])("when acme calls the JetStream API %s directly, then it is refused and globex's timers fire", async (subject) => {
    await globexTimersSurvive(`direct-api-${subject}`, async () => {
      const before = await brokerState();

      expect(await requestError(stack.acme, subject)).toMatch(/permissions violation for publish/i);
      expect(await brokerState()).toEqual(before);
    });
  });

  it("when acme subscribes to _INBOX.>, then it sees none of globex's publish acks and globex's timers fire", async () => {
    const spy = stack.acme.subscribe("_INBOX.>");
    await stack.acme.flush();
    const seen: string[] = [];
    void (async () => {
      for await (const msg of spy) seen.push(`${msg.subject} ${msg.string()}`);
    })();

    await globexTimersSurvive("inbox-spy", async () => undefined); // globex's JetStream publishes happen here

    spy.unsubscribe();
    expect(seen).toEqual([]);
  });

  it("when acme forges a DueTimeReached on globex's or its own event subject, then the server refuses both and globex receives no forgery", async () => {
    const forged = JSON.stringify({ type: "DueTimeReached", tenantId: "globex", payload: { tenantId: "globex", serviceCallId: "forged" } });
    await globexTimersSurvive("forge", async () => {
      expect(await requestError(stack.acme, "timer.events.due.globex", forged)).toMatch(
        /permissions violation for publish to "timer\.events\.due\.globex"/i,
      );
      expect(await requestError(stack.acme, "timer.events.due.acme", forged)).toMatch(/permissions violation for publish/i);
    });
    expect(globexEvents.raw.some((text) => text.includes('"forged"'))).toBe(false);
  });

  it.each(["timer.events.due.globex", "timer.events.>", "$SYS.>"])(
    "when acme subscribes to %s, then the server closes the subscription and globex's timers fire",
    async (subject) => {
      await globexTimersSurvive(`subscribe-${subject}`, async () => {
        const sub = stack.acme.subscribe(subject);
        const closedWith = await Promise.race([sub.closed, new Promise<string>((r) => setTimeout(() => r("still open"), 5_000))]);

        expect(String(closedWith)).toMatch(/permissions violation for subscription/i);
      });
    },
  );

  it.each(["$SYS.REQ.SERVER.PING.CONNZ", "$SYS.REQ.ACCOUNT.PING.CONNZ", "timer.query.get.globex"])(
    "when acme requests %s, then it is refused and globex's timers fire",
    async (subject) => {
      await globexTimersSurvive(`request-${subject}`, async () => {
        expect(await requestError(stack.acme, subject, "{}")).toMatch(/permissions violation for publish/i);
      });
    },
  );
});
