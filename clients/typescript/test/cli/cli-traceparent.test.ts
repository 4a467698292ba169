/** `--traceparent` (CONTRACT §13): sent as the command's header; an invalid value is refused before anything is sent. */
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliAgainst, type CliResult } from "./cli-support.js";
import { NatsServerProcess } from "../../../../test/support/nats-server.js";

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

let nats: NatsServerProcess;
let nc: NatsConnection;
let jsm: JetStreamManager;
const commands: Msg[] = [];

// No service: the commands stream it would create is enough for the CLI's publish ack.
beforeAll(async () => {
  nats = await NatsServerProcess.start();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: "TIMER_COMMANDS", subjects: ["timer.commands.>"] });
  nc.subscribe("timer.commands.>", { callback: (_error, msg) => void commands.push(msg) });
  await nc.flush();
});

afterAll(async () => {
  await nc?.close();
  await nats?.dispose();
});

// No service answers outcomes here: --no-confirm.
const cli = (...args: string[]): Promise<CliResult> => runCliAgainst(nats.url, ...args, "--no-confirm");

describe("timer-client schedule --traceparent", () => {
  it("when --traceparent is given, then the published ScheduleTimer carries it as its traceparent header", async () => {
    const result = await cli("schedule", "--tenant", "tp", "--id", "traced", "--in", "1h", "--traceparent", TRACEPARENT);

    expect(result.code, result.stderr).toBe(0);
    const { commandId: id } = JSON.parse(result.stdout) as { commandId: string };
    // The CLI exits after the stream's ack, so the core subscription has the message once flushed.
    await nc.flush();
    const sent = commands.find((m) => m.json<{ id: string }>().id === id);
    expect(sent?.subject).toBe("timer.commands.schedule.tp");
    expect(sent?.headers?.get("traceparent")).toBe(TRACEPARENT);
    expect(sent?.headers?.get("Nats-Msg-Id")).toBe(id);
  });

  it("when cancel and retry get --traceparent, then their commands carry it too", async () => {
    for (const args of [
      ["cancel", "--tenant", "tp", "--id", "traced"],
      ["retry", "--tenant", "tp", "--id", "traced"],
    ]) {
      const result = await cli(...args, "--traceparent", TRACEPARENT);
      expect(result.code, result.stderr).toBe(0);
      const { commandId: id } = JSON.parse(result.stdout) as { commandId: string };
      await nc.flush();
      expect(commands.find((m) => m.json<{ id: string }>().id === id)?.headers?.get("traceparent"), args[0]).toBe(TRACEPARENT);
    }
  });

  it.each([
    ["not-a-traceparent"],
    ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"], // three fields
    ["00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"], // upper case
    ["00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01"], // a short trace-id
    ["00-00000000000000000000000000000000-00f067aa0ba902b7-01"], // an all-zero trace-id
    ["00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"], // an all-zero parent id
    ["ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"], // the forbidden version
    ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"], // version 00 has four fields
  ])("when --traceparent is %s, then the CLI exits 2 naming it and sends nothing", async (value) => {
    const before = (await jsm.streams.info("TIMER_COMMANDS")).state.last_seq;

    const result = await cli("schedule", "--tenant", "tp", "--id", "refused", "--in", "1h", "--traceparent", value);

    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`--traceparent "${value}" is not a W3C traceparent`);
    expect(result.stdout).toBe("");
    // A publish the CLI made would be stored before it exited.
    expect((await jsm.streams.info("TIMER_COMMANDS")).state.last_seq).toBe(before);
  });

  it("when a later version adds fields, then the traceparent is accepted as W3C allows", async () => {
    const future = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-abcd";
    const result = await cli("schedule", "--tenant", "tp", "--id", "future", "--in", "1h", "--traceparent", future);
    expect(result.code, result.stderr).toBe(0);
  });
});
