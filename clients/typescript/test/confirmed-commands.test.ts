/**
 * `confirm: true` (CONTRACT §19) against a real nats-server, with a small responder in place of the
 * service: it reads the commands from the subject like the service does and answers each one that
 * carries `Timer-Confirm: 1` with a CommandOutcome on `timer.outcomes.{tenantId}`.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../test/support/free-port.js";
import { NatsServerProcess } from "../../../test/support/nats-server.js";
import { connectTimerClient, type TimerClient, TimerClientError, TimerRejectedError } from "../src/index.js";

let nats: NatsServerProcess;
let monitorPort: number;
let responder: NatsConnection;
const clients: TimerClient[] = [];

interface Seen {
  readonly subject: string;
  readonly confirm: string | undefined;
  readonly envelope: { id: string; type: string; tenantId: string; payload: Record<string, unknown> };
}

/** Every command the responder saw, and how it answers one (undefined: no answer). */
const seen: Seen[] = [];
let answer: (command: Seen) => Record<string, unknown> | undefined = () => undefined;
const seenWaiters = new Map<string, (command: Seen) => void>();

/** The command with envelope id `id` as the responder saw it (a core subscriber may see it after the stream's ack). */
function seenCommand(id: string): Promise<Seen> {
  const found = seen.find((s) => s.envelope.id === id);
  return found !== undefined ? Promise.resolve(found) : new Promise((resolve) => seenWaiters.set(id, resolve));
}

/** Commands held back to be answered later, in an order the test picks. */
let held: Seen[] | undefined;

function outcomeFor(command: Seen, outcome: "applied" | "ignored" | "rejected", extra: Record<string, unknown> = {}) {
  return {
    type: "CommandOutcome",
    commandId: command.envelope.id,
    serviceCallId: command.envelope.payload.serviceCallId,
    outcome,
    ...extra,
  };
}

function publishOutcome(command: Seen): void {
  const outcome = answer(command);
  if (outcome !== undefined) responder.publish(`timer.outcomes.${command.envelope.tenantId}`, JSON.stringify(outcome));
}

async function client(tenantId: string, options: { confirmTimeoutMs?: number } = {}): Promise<TimerClient> {
  const c = await connectTimerClient({ servers: nats.url, tenantId, name: `client-${tenantId}`, ...options });
  clients.push(c);
  return c;
}

beforeAll(async () => {
  monitorPort = await freePort();
  nats = await NatsServerProcess.start(["-m", String(monitorPort)]);
  responder = await connect({ servers: nats.url });
  const jsm = await jetstreamManager(responder);
  await jsm.streams.add({ name: "TIMER_COMMANDS", subjects: ["timer.commands.>"] });
  responder.subscribe("timer.commands.>", {
    callback: (_error, message: Msg) => {
      const command: Seen = {
        subject: message.subject,
        confirm: message.headers?.get("Timer-Confirm") || undefined,
        envelope: message.json(),
      };
      seen.push(command);
      seenWaiters.get(command.envelope.id)?.(command);
      if (command.confirm !== "1") return;
      if (held !== undefined) held.push(command);
      else publishOutcome(command);
    },
  });
  await responder.flush();
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await responder?.close();
  await nats?.dispose();
});

describe("confirmed commands (CONTRACT §19)", () => {
  it("when schedule is sent with confirm, then it carries Timer-Confirm: 1 and resolves with the applied outcome", async () => {
    const timers = await client("confirm-applied");
    answer = (c) =>
      outcomeFor(c, "applied", { reason: "scheduled", timer: { state: "Scheduled", dueAt: c.envelope.payload.dueAt, generation: 1 } });
    const result = await timers.schedule({ serviceCallId: "order-1", dueAt: "2030-01-01T00:00:00.000Z", confirm: true });
    expect(result).toMatchObject({
      commandId: result.command.id,
      serviceCallId: "order-1",
      outcome: "applied",
      reason: "scheduled",
      timer: { state: "Scheduled", dueAt: "2030-01-01T00:00:00.000Z", generation: 1 },
      stream: "TIMER_COMMANDS",
      subject: "timer.commands.schedule.confirm-applied",
    });
    const sent = await seenCommand(result.commandId);
    expect(sent.confirm).toBe("1");
    expect(sent.envelope).not.toHaveProperty("confirm");
    expect(sent.envelope.payload).not.toHaveProperty("confirm");
  });

  it("when a command is sent without confirm, then it carries no Timer-Confirm header and resolves on the stream's ack", async () => {
    const timers = await client("confirm-none");
    const result = await timers.cancel("order-1");
    expect(result).not.toHaveProperty("outcome");
    expect((await seenCommand(result.commandId)).confirm).toBeUndefined();
  });

  it("when every kind of command is confirmed, then each resolves with its own outcome, ignored ones with their reason", async () => {
    const timers = await client("confirm-kinds");
    answer = (c) => outcomeFor(c, "ignored", { reason: `${c.envelope.type} ignored: the timer is closed to commands` });
    const results = [
      await timers.cancel("a", { confirm: true }),
      await timers.cancelPrefix("a-", { confirm: true }),
      await timers.retry("a", { confirm: true }),
      await timers.complete("a", "ok", { confirm: true }),
      await timers.fail("a", "broken", { confirm: true }),
    ];
    expect(results.map((r) => [r.command.type, r.outcome, r.reason])).toEqual([
      ["CancelTimer", "ignored", "CancelTimer ignored: the timer is closed to commands"],
      ["CancelTimersByPrefix", "ignored", "CancelTimersByPrefix ignored: the timer is closed to commands"],
      ["RetryTimer", "ignored", "RetryTimer ignored: the timer is closed to commands"],
      ["TimerCompleted", "ignored", "TimerCompleted ignored: the timer is closed to commands"],
      ["TimerFailed", "ignored", "TimerFailed ignored: the timer is closed to commands"],
    ]);
    for (const r of results) expect((await seenCommand(r.commandId)).confirm).toBe("1");
  });

  it("when the outcome is rejected, then the promise rejects with TimerRejectedError carrying code, reason and commandId", async () => {
    const timers = await client("confirm-rejected");
    answer = (c) =>
      outcomeFor(c, "rejected", { code: "TIMER_FINAL", reason: "order-1 fired at 2026-01-01T00:00:00.000Z; use a new serviceCallId" });
    const error = await timers.schedule({ serviceCallId: "order-1", dueAt: new Date(), confirm: true }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TimerRejectedError);
    const rejected = error as TimerRejectedError;
    expect(rejected.code).toBe("TIMER_FINAL");
    expect(rejected.reason).toBe("order-1 fired at 2026-01-01T00:00:00.000Z; use a new serviceCallId");
    expect(rejected.commandId).toBe(seen.at(-1)!.envelope.id);
    expect(rejected.message).toContain("TIMER_FINAL");
  });

  it("when outcomes arrive in another order than the commands, then each command gets its own, over one subscription", async () => {
    const timers = await client("confirm-many");
    answer = (c) => outcomeFor(c, "applied", { reason: `applied ${String(c.envelope.payload.serviceCallId)}` });
    held = [];
    const ids = ["t-1", "t-2", "t-3", "t-4", "t-5"];
    const pending = ids.map((id) => timers.schedule({ serviceCallId: id, dueAt: "2030-01-01T00:00:00Z", confirm: true }));
    const commands = held;
    while (commands.length < ids.length) await responder.flush();
    held = undefined;
    for (const command of [...commands].reverse()) publishOutcome(command);
    const results = await Promise.all(pending);
    expect(results.map((r) => r.reason)).toEqual(ids.map((id) => `applied ${id}`));
    const connz = (await (await fetch(`http://127.0.0.1:${monitorPort}/connz?subs=1`)).json()) as {
      connections: { name?: string; subscriptions_list?: string[] }[];
    };
    const subscriptions = connz.connections.find((c) => c.name === "client-confirm-many")?.subscriptions_list ?? [];
    expect(subscriptions.filter((s) => s === "timer.outcomes.confirm-many")).toHaveLength(1);
  });

  it("when no outcome comes within confirmTimeoutMs, then it rejects saying the command may still be applied and how to look", async () => {
    const timers = await client("confirm-silent", { confirmTimeoutMs: 200 });
    answer = () => undefined;
    const error = (await timers.schedule({ serviceCallId: "quiet-1", dueAt: "2030-01-01T00:00:00Z", confirm: true }).then(
      () => undefined,
      (e: unknown) => e,
    )) as TimerClientError;
    expect(error).toBeInstanceOf(TimerClientError);
    expect(error.code).toBe("NO_OUTCOME");
    expect(error.detail).toMatch(
      /^no outcome within 200 ms; the command is stored \(stream TIMER_COMMANDS, seq \d+\) and may still be applied: look with get\("quiet-1"\), or timer-client get --tenant confirm-silent --id "quiet-1"$/,
    );
  });
});
