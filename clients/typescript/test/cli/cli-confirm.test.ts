/**
 * timer-client as a process against a real nats-server: outcomes of confirmed commands (CONTRACT
 * §19, answered by a test responder), refused dates, the history timeline, and errors that name the server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../../../../test/support/nats-server.js";
import { outcomeOf, TestResponder } from "../support/test-responder.js";
import { runCli, type CliResult } from "./cli-support.js";

let nats: NatsServerProcess;
let responder: TestResponder;

beforeAll(async () => {
  nats = await NatsServerProcess.start();
  responder = await TestResponder.start(nats.url);
});

afterAll(async () => {
  await responder?.close();
  await nats?.dispose();
});

const cli = (...args: string[]): Promise<CliResult> => runCli(args, { NATS_URL: nats.url });
const FAR = "2030-01-01T09:00:00Z";

describe("timer-client: confirmed commands", () => {
  it("when schedule is run, then it waits for the outcome and prints it, and the command carried Timer-Confirm: 1", async () => {
    responder.answer = (c) =>
      outcomeOf(c, "applied", { reason: "scheduled", timer: { state: "Scheduled", dueAt: "2030-01-01T09:00:00.000Z", generation: 1 } });
    const result = await cli("schedule", "--tenant", "acme", "--id", "order-1", "--at", FAR);
    expect(result.code, result.stderr).toBe(0);
    const printed = JSON.parse(result.stdout);
    expect(printed).toMatchObject({
      type: "ScheduleTimer",
      serviceCallId: "order-1",
      outcome: "applied",
      reason: "scheduled",
      timer: { state: "Scheduled", dueAt: "2030-01-01T09:00:00.000Z", generation: 1 },
    });
    expect(result.stderr).toBe("ScheduleTimer order-1: applied: scheduled — now Scheduled, due 2030-01-01T09:00:00.000Z (generation 1)\n");
    expect((await responder.command(printed.commandId)).confirm).toBe("1");
  });

  it("when cancel and cancel-prefix are run, then they are confirmed too; an ignored outcome exits 0 with its reason", async () => {
    responder.answer = (c) => outcomeOf(c, "ignored", { reason: "the timer is closed to commands (Reached)" });
    const cancel = await cli("cancel", "--tenant", "acme", "--id", "order-1");
    expect([cancel.code, JSON.parse(cancel.stdout).outcome]).toEqual([0, "ignored"]);
    expect(cancel.stderr).toContain("CancelTimer order-1: ignored: the timer is closed to commands (Reached)");
    const prefix = await cli("cancel-prefix", "--tenant", "acme", "--id-prefix", "order-");
    expect([prefix.code, JSON.parse(prefix.stdout).type]).toEqual([0, "CancelTimersByPrefix"]);
    expect((await responder.command(JSON.parse(prefix.stdout).commandId)).confirm).toBe("1");
  });

  it("when the service rejects the command, then it exits 3 with the code and the reason", async () => {
    responder.answer = (c) => outcomeOf(c, "rejected", { code: "TIMER_FINAL", reason: "order-1 fired at 2026-01-01T00:00:00.000Z" });
    const result = await cli("schedule", "--tenant", "acme", "--id", "order-1", "--in", "1h");
    expect(result.code).toBe(3);
    expect(result.stderr).toBe("timer-client: rejected TIMER_FINAL: order-1 fired at 2026-01-01T00:00:00.000Z\n");
    expect(JSON.parse(result.stdout)).toMatchObject({ outcome: "rejected", code: "TIMER_FINAL", serviceCallId: "order-1" });
  });

  it("when --no-confirm is given, then no Timer-Confirm is sent and it returns on the stream's ack", async () => {
    responder.answer = () => undefined;
    const result = await cli("schedule", "--tenant", "acme", "--id", "order-2", "--in", "1h", "--no-confirm");
    expect(result.code, result.stderr).toBe(0);
    const printed = JSON.parse(result.stdout);
    expect(printed).not.toHaveProperty("outcome");
    expect((await responder.command(printed.commandId)).confirm).toBeUndefined();
  });

  it("when no outcome comes in time, then it exits 4 saying the command may still be applied and how to look", async () => {
    responder.answer = () => undefined;
    const result = await cli("schedule", "--tenant", "acme", "--id", "order-3", "--in", "1h", "--confirm-timeout", "300ms");
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(
      /no outcome within 300 ms; the command is stored \(stream TIMER_COMMANDS, seq \d+\) and may still be applied: look with .*timer-client get --tenant acme --id "order-3"/,
    );
  });
});

describe("timer-client: dates it cannot read", () => {
  it.each([
    ["2026-13-01T00:00:00Z", "there is no month 13"],
    ["2026-02-30T09:00:00Z", "February 2026 has 28 days, not 30"],
    ["2026-03-01T25:00:00Z", "there is no hour 25"],
    ["2026-03-01T09:60:00Z", "there is no minute 60"],
    ["tomorow 9am", "it is not ISO 8601"],
  ])("when --at is %s, then it exits 2 naming the value, why and a valid example, and sends nothing", async (at, why) => {
    const before = await responder.stored();
    const result = await cli("schedule", "--tenant", "acme", "--id", "bad-date", "--at", at);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(`--at "${at}" is not a date-time: ${why}`);
    expect(result.stderr).toContain("e.g. 2026-03-01T09:00:00Z");
    expect(await responder.stored()).toBe(before);
  });
});

describe("timer-client history", () => {
  it("when a timer has a history, then it asks get with history: true and prints one line per entry, oldest first", async () => {
    responder.getReply = () => ({
      timer: {
        tenantId: "acme",
        serviceCallId: "order-7",
        state: "Reached",
        dueAt: "2026-03-01T09:00:00.000Z",
        generation: 2,
        commandTimestampMs: 1,
      },
      history: [
        { at: "2026-03-01T08:00:00.000Z", kind: "command", type: "ScheduleTimer", commandId: "c-1", timestampMs: 1, outcome: "applied" },
        {
          at: "2026-03-01T08:00:01.000Z",
          kind: "command",
          type: "ScheduleTimer",
          commandId: "c-0",
          timestampMs: 0,
          outcome: "ignored",
          reason: "older timestampMs",
        },
        {
          at: "2026-03-01T08:30:00.000Z",
          kind: "command",
          type: "CancelTimer",
          commandId: "c-2",
          timestampMs: 2,
          outcome: "rejected",
          code: "INVALID_FIELD",
        },
        { at: "2026-03-01T09:00:00.012Z", kind: "fired", eventId: "acme:order-7:1772355600000:2", attempt: 1, lateMs: 12 },
        { at: "2026-03-01T09:05:00.000Z", kind: "timeout", attempt: 1 },
        { at: "2026-03-01T09:06:00.000Z", kind: "command", type: "RetryTimer", commandId: "c-3", outcome: "applied", action: "retry" },
        {
          at: "2026-03-01T09:07:00.000Z",
          kind: "command",
          type: "CancelTimer",
          commandId: "c-4",
          timestampMs: 4,
          outcome: "applied",
          reason: "nothing to change: the timer already was Cancelled as the command asks",
        },
      ],
    });
    const result = await cli("history", "order-7", "--tenant", "acme");
    expect(result.code, result.stderr).toBe(0);
    expect(responder.getRequests.at(-1)).toEqual({ serviceCallId: "order-7", history: true });
    expect(result.stdout.split("\n")).toEqual([
      "order-7 (acme): Reached, due 2026-03-01T09:00:00.000Z, generation 2",
      "  2026-03-01T08:00:00.000Z  command  ScheduleTimer applied, command c-1",
      "  2026-03-01T08:00:01.000Z  command  ScheduleTimer ignored: older timestampMs, command c-0",
      "  2026-03-01T08:30:00.000Z  command  CancelTimer rejected INVALID_FIELD, command c-2",
      "  2026-03-01T09:00:00.012Z  fired    fired, attempt 1, 12 ms late, event acme:order-7:1772355600000:2",
      "  2026-03-01T09:05:00.000Z  timeout  completion timed out, attempt 1",
      "  2026-03-01T09:06:00.000Z  command  RetryTimer applied, command c-3, action retry",
      "  2026-03-01T09:07:00.000Z  command  CancelTimer applied: nothing to change: the timer already was Cancelled as the command asks, command c-4",
      "",
    ]);
    const json = await cli("history", "order-7", "--tenant", "acme", "--json");
    expect(JSON.parse(json.stdout).history).toHaveLength(7);
  });

  it("when the timer is unknown, then it says so and exits 1", async () => {
    responder.getReply = () => ({ timer: null, history: [] });
    const result = await cli("history", "nope", "--tenant", "acme");
    expect([result.code, result.stdout]).toEqual([1, 'no timer "nope" for tenant acme\n']);
  });
});

describe("timer-client: which server, and errors that name it", () => {
  it("when NATS_URL is unset, then TIMER_BROKER_URL is used; when both are set, NATS_URL wins", async () => {
    responder.getReply = () => ({ timer: null });
    const fallback = await runCli(["get", "--tenant", "acme", "--id", "x"], { TIMER_BROKER_URL: nats.url });
    expect([fallback.code, fallback.stderr]).toEqual([1, 'no timer "x" for tenant acme\n']);
    const both = await runCli(["get", "--tenant", "acme", "--id", "x"], { NATS_URL: nats.url, TIMER_BROKER_URL: "nats://127.0.0.1:1" });
    expect(both.code).toBe(1);
    expect(both.stderr).toBe('no timer "x" for tenant acme\n');
  });

  it("when nothing listens at the URL, then the error names it", async () => {
    const result = await runCli(["stats", "--tenant", "acme"], { NATS_URL: "nats://127.0.0.1:1" });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^timer-client: connecting to NATS at nats:\/\/127\.0\.0\.1:1: /);
  });

  it("when no service answers queries there, then the no-responders message names the server", async () => {
    const result = await cli("stats", "--tenant", "acme");
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `timer-client: query stats: no responders on timer.query.stats.acme at nats://127.0.0.1:${nats.port} (is the timer service running there?)\n`,
    );
  });

  it("when no stream stores the commands, then the message names the server", async () => {
    const result = await cli("schedule", "--tenant", "acme", "--id", "x", "--in", "1h", "--prefix", "nostream", "--no-confirm");
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`the timer service has not created its streams on nats://127.0.0.1:${nats.port} yet`);
  });
});
