import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, headers as natsHeaders, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CommandSettlement } from "../../src/app/commands/timer-command-processor.js";
import { JetStreamBacklogBypass, BYPASS_BACKLOG_MIN } from "../../src/adapters/nats/jetstream-backlog-bypass.js";
import { ensureTimerTopology, type TimerTopology } from "../../src/adapters/nats/jetstream-topology.js";
import type { CommandSource } from "../../src/adapters/nats/command-partitions.js";
import type { StoredDeliveredCommand } from "../../src/adapters/nats/stored-delivered-command.js";
import { RecordingLogger } from "../support/fakes/recording-logger.js";
import { NatsServerProcess } from "../support/nats-server.js";
import { brokerPartitionOf } from "../support/command-consumers.js";

/**
 * The backlog bypass against a real nats-server: with a flooder's commands queued in a partition
 * and no consumer pulling, one round hands over exactly the small tenants' commands stored after
 * the consumer's delivered sequence, in stream order and with their published subjects, removes
 * them after an ack, and leaves a nak'ed one in the stream for its delay.
 */

const PARTITIONS = 4;
const FLOODING = "flooding";
const decoder = new TextDecoder();
/** Tenants in the flooder's partition (the broker's hash). */
const sharing = Array.from({ length: 200 }, (_, i) => `sharing-${i}`).filter(
  (t) => brokerPartitionOf(t, PARTITIONS) === brokerPartitionOf(FLOODING, PARTITIONS),
);

describe("backlog bypass", () => {
  let server: NatsServerProcess;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let run = 0;

  beforeAll(async () => {
    server = await NatsServerProcess.start();
    nc = await connect({ servers: server.url });
    jsm = await jetstreamManager(nc);
  });
  afterAll(async () => {
    await nc?.close();
    await server?.dispose();
  });

  const setUp = async (partitions = PARTITIONS): Promise<{ topology: TimerTopology; sources: readonly CommandSource[] }> => {
    run++;
    const topology = {
      subjectPrefix: `b${run}`,
      commandsStream: `BCMD_${run}`,
      eventsStream: `BEVT_${run}`,
      consumerName: `bc${run}`,
      partitions,
      serverVersion: "2.10.27",
    };
    const { sources } = await ensureTimerTopology(jsm, topology);
    return { topology, sources };
  };
  const publish = async (topology: TimerTopology, tenant: string, bodies: readonly string[], kind = "schedule") => {
    const js = jetstream(nc);
    await Promise.all(bodies.map((body) => js.publish(`${topology.subjectPrefix}.commands.${kind}.${tenant}`, body)));
  };
  const flood = (topology: TimerTopology, n: number) =>
    publish(
      topology,
      FLOODING,
      Array.from({ length: n }, (_, i) => `a-${i}`),
    );
  const bypassWith = (
    topology: TimerTopology,
    sources: readonly CommandSource[],
    decide: (c: StoredDeliveredCommand) => CommandSettlement,
  ) => {
    const handed: StoredDeliveredCommand[] = [];
    const bypass = new JetStreamBacklogBypass(jsm, {
      stream: topology.commandsStream,
      sources: () => sources,
      hand: (command) => {
        handed.push(command);
        setImmediate(() => command.settle(decide(command)));
      },
      logger: new RecordingLogger(),
    });
    return { bypass, handed };
  };
  const storedFor = async (topology: TimerTopology, tenant: string) => {
    const info = await jsm.streams.info(topology.commandsStream, { subjects_filter: `${topology.subjectPrefix}.>` });
    const mine = Object.entries(info.state.subjects ?? {}).filter(([subject]) => subject.endsWith(`.${tenant}`));
    return mine.reduce((sum, [, count]) => sum + count, 0);
  };

  it("when a partition is flooded, then a round hands over the small tenants' commands in order and removes them after the ack", async () => {
    const { topology, sources } = await setUp();
    const [b, c] = sharing;
    await flood(topology, BYPASS_BACKLOG_MIN + 500);
    for (let i = 0; i < 3; i++) await publish(topology, b!, [`b-${i}`], i === 2 ? "cancel" : "schedule");
    await publish(topology, c!, ["c-0"]);
    const { bypass, handed } = bypassWith(topology, sources, () => ({ kind: "ack" }));

    expect(await bypass.round()).toBe(4);
    await bypass.settled();

    expect(handed.map((h) => decoder.decode(h.body)).sort()).toEqual(["b-0", "b-1", "b-2", "c-0"]);
    expect(handed.filter((h) => h.subject.endsWith(`.${b}`)).map((h) => h.subject)).toEqual([
      `${topology.subjectPrefix}.commands.schedule.${b}`,
      `${topology.subjectPrefix}.commands.schedule.${b}`,
      `${topology.subjectPrefix}.commands.cancel.${b}`,
    ]);
    expect(handed.every((h) => h.deliveryCount === 1 && h.sourceId.startsWith(`${topology.commandsStream}:`))).toBe(true);
    expect(await storedFor(topology, b!)).toBe(0);
    expect(await storedFor(topology, FLOODING)).toBe(BYPASS_BACKLOG_MIN + 500);
    // Nothing left to read: the next round hands over nothing.
    expect(await bypass.round()).toBe(0);
  });

  it("when a bypassed command was sent with Timer-Confirm: 1, then it asks for its outcome as a delivered one would; one without does not", async () => {
    const { topology, sources } = await setUp();
    const [b] = sharing;
    await flood(topology, BYPASS_BACKLOG_MIN + 10);
    const confirm = natsHeaders();
    confirm.set("Timer-Confirm", "1");
    const js = jetstream(nc);
    await js.publish(`${topology.subjectPrefix}.commands.schedule.${b}`, "confirmed", { headers: confirm });
    await js.publish(`${topology.subjectPrefix}.commands.schedule.${b}`, "silent");
    const { bypass, handed } = bypassWith(topology, sources, () => ({ kind: "ack" }));

    expect(await bypass.round()).toBe(2);
    await bypass.settled();

    expect(handed.map((h) => [decoder.decode(h.body), h.confirm])).toEqual([
      ["confirmed", true],
      ["silent", false],
    ]);
  });

  it("when the consumer has delivered a tenant's first command, then only its later ones are read", async () => {
    const { topology, sources } = await setUp();
    const b = sharing[0]!;
    await publish(topology, b, ["b-early"]);
    const partitionConsumer = sources.find((s) => s.partitioned && s.stem.endsWith(`.${brokerPartitionOf(b, PARTITIONS)}.`))!;
    const consumer = await jetstream(nc).consumers.get(topology.commandsStream, partitionConsumer.consumer);
    const early = await consumer.next();
    expect(early?.string()).toBe("b-early");
    await flood(topology, BYPASS_BACKLOG_MIN + 100);
    await publish(topology, b, ["b-late"]);
    const { bypass, handed } = bypassWith(topology, sources, () => ({ kind: "ack" }));

    await bypass.round();
    await bypass.settled();

    expect(handed.map((h) => decoder.decode(h.body))).toEqual(["b-late"]);
    early!.ack();
  });

  it("when a bypassed command is nak'ed, then it stays in the stream and is handed over again only after its delay", async () => {
    const { topology, sources } = await setUp();
    const b = sharing[0]!;
    await flood(topology, BYPASS_BACKLOG_MIN + 100);
    await publish(topology, b, ["b-0"]);
    let decision: CommandSettlement = { kind: "nak", delayMs: 300 };
    const { bypass, handed } = bypassWith(topology, sources, () => decision);

    expect(await bypass.round()).toBe(1);
    await bypass.settled();
    expect(await bypass.round()).toBe(0);
    expect(await storedFor(topology, b)).toBe(1);
    await new Promise((r) => setTimeout(r, 350));
    decision = { kind: "term", reason: "rejected" };
    expect(await bypass.round()).toBe(1);
    await bypass.settled();

    expect(handed.map((h) => h.deliveryCount)).toEqual([1, 2]);
    expect(await storedFor(topology, b)).toBe(0);
  });

  it("when a round's commands are still in flight, then the next round reads only what came since", async () => {
    const { topology, sources } = await setUp();
    const b = sharing[0]!;
    await flood(topology, BYPASS_BACKLOG_MIN + 100);
    await publish(topology, b, ["b-0", "b-1"]);
    const held: StoredDeliveredCommand[] = [];
    const bypass = new JetStreamBacklogBypass(jsm, {
      stream: topology.commandsStream,
      sources: () => sources,
      hand: (command) => held.push(command),
      logger: new RecordingLogger(),
    });

    expect(await bypass.round()).toBe(2);
    expect(await bypass.round()).toBe(0);
    await publish(topology, b, ["b-2"]);
    expect(await bypass.round()).toBe(1);

    expect(held.map((h) => decoder.decode(h.body))).toEqual(["b-0", "b-1", "b-2"]);
    for (const command of held) command.settle({ kind: "ack" });
    await bypass.settled();
    expect(await storedFor(topology, b)).toBe(0);
  });

  it("when two instances read the same commands, then each applies them, both remove them, and the second removal passes quietly", async () => {
    const { topology, sources } = await setUp();
    const b = sharing[0]!;
    await flood(topology, BYPASS_BACKLOG_MIN + 100);
    await publish(topology, b, ["b-0", "b-1"]);
    const instances = [0, 1].map(() => {
      const handed: StoredDeliveredCommand[] = [];
      const logger = new RecordingLogger();
      const bypass = new JetStreamBacklogBypass(jsm, {
        stream: topology.commandsStream,
        sources: () => sources,
        hand: (command) => handed.push(command),
        logger,
      });
      return { bypass, handed, logger };
    });

    // Both read before either settles: the window in which several instances see the same messages.
    expect(await Promise.all(instances.map((i) => i.bypass.round()))).toEqual([2, 2]);
    for (const { handed } of instances) for (const command of handed) command.settle({ kind: "ack" });
    await Promise.all(instances.map((i) => i.bypass.settled()));

    expect(instances.map((i) => i.handed.map((h) => h.sourceId))).toEqual([
      instances[0]!.handed.map((h) => h.sourceId),
      instances[0]!.handed.map((h) => h.sourceId),
    ]);
    expect(await storedFor(topology, b)).toBe(0);
    expect(instances.flatMap((i) => i.logger.at("warn"))).toEqual([]);
    // Neither reads them again.
    expect(await Promise.all(instances.map((i) => i.bypass.round()))).toEqual([0, 0]);
  });

  it("when the partition's backlog is small, then the bypass leaves everything to the consumer", async () => {
    const { topology, sources } = await setUp();
    await flood(topology, 100);
    await publish(topology, sharing[0]!, ["b-0"]);
    const { bypass } = bypassWith(topology, sources, () => ({ kind: "ack" }));

    expect(await bypass.round()).toBe(0);
  });

  it("when the stream has no partitions (nats-server before 2.10, or TIMER_COMMAND_PARTITIONS=1), then the bypass reads beside the one consumer", async () => {
    const { topology, sources } = await setUp(1);
    expect(sources).toHaveLength(1);
    await flood(topology, BYPASS_BACKLOG_MIN + 100);
    await publish(topology, "quiet", ["q-0"]);
    const { bypass, handed } = bypassWith(topology, sources, () => ({ kind: "ack" }));

    expect(await bypass.round()).toBe(1);
    await bypass.settled();

    expect(handed.map((h) => h.subject)).toEqual([`${topology.subjectPrefix}.commands.schedule.quiet`]);
    expect(await storedFor(topology, "quiet")).toBe(0);
  });
});
