import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { CommandSettlement, DeliveredCommand } from "../../src/app/commands/timer-command-processor.js";
import { ensureTimerTopology, type TimerTopology } from "../../src/adapters/nats/jetstream-topology.js";
import { NatsCommandConsumer } from "../../src/adapters/nats/nats-command-consumer.js";
import type { CommandSource } from "../../src/adapters/nats/command-partitions.js";
import { RecordingLogger } from "../support/fakes/recording-logger.js";
import { NatsServerProcess } from "../support/nats-server.js";
import { commandConsumersState } from "../support/command-consumers.js";
import { waitFor } from "../support/wait-for.js";

/**
 * The commands stream partitioned by tenant, against a real nats-server: the transform and the
 * consumers the topology makes, subjects as published, the partitioning of a stream an older
 * version made (its stored commands still consumed), and no partitions on a server without
 * subject transforms.
 */

const decoder = new TextDecoder();

class RecordingProcessor {
  readonly received: Array<{ subject: string; body: string }> = [];

  process(batch: readonly DeliveredCommand[]): Promise<CommandSettlement[]> {
    for (const m of batch) this.received.push({ subject: m.subject, body: decoder.decode(m.body) });
    return Promise.resolve(batch.map(() => ({ kind: "ack" })));
  }
}

const VERSION = "2.10.27";

describe("commands stream partitions", () => {
  let server: NatsServerProcess;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let run = 0;
  let consumer: NatsCommandConsumer | undefined;

  beforeAll(async () => {
    server = await NatsServerProcess.start();
    nc = await connect({ servers: server.url });
    jsm = await jetstreamManager(nc);
  });
  afterAll(async () => {
    await nc?.close();
    await server?.dispose();
  });
  afterEach(async () => {
    await consumer?.stop();
    consumer = undefined;
  });

  const newTopology = (partitions: number): TimerTopology => {
    run++;
    return { subjectPrefix: `p${run}`, commandsStream: `PCMD_${run}`, eventsStream: `PEVT_${run}`, consumerName: `pc${run}`, partitions };
  };
  const startConsumer = async (topology: TimerTopology, sources: readonly CommandSource[]): Promise<RecordingProcessor> => {
    const processor = new RecordingProcessor();
    consumer = new NatsCommandConsumer(jetstream(nc), processor, {
      stream: topology.commandsStream,
      consumer: topology.consumerName,
      sources: () => sources,
      logger: new RecordingLogger(),
      onMissingConsumer: () => undefined,
    });
    await consumer.start();
    return processor;
  };
  const publish = async (topology: TimerTopology, tenants: readonly string[]) => {
    const js = jetstream(nc);
    for (const tenant of tenants) await js.publish(`${topology.subjectPrefix}.commands.schedule.${tenant}`, `for-${tenant}`);
  };
  const tenants = Array.from({ length: 24 }, (_, i) => `tenant-${i}`);

  it("when partitions are asked for on 2.10, then the stream maps tenants to partitions and each command arrives once, with its published subject", async () => {
    const topology = newTopology(4);
    const state = await ensureTimerTopology(jsm, { ...topology, serverVersion: VERSION });
    expect(state.sources.map((s) => s.consumer)).toEqual([
      topology.consumerName,
      ...[0, 1, 2, 3].map((p) => `${topology.consumerName}-p${p}`),
    ]);
    const processor = await startConsumer(topology, state.sources);

    await publish(topology, tenants);

    await waitFor(
      () => processor.received.length,
      (n) => n === tenants.length,
      15_000,
      "every command received",
    );
    expect(processor.received.map((r) => r.subject).sort()).toEqual(
      tenants.map((t) => `${topology.subjectPrefix}.commands.schedule.${t}`).sort(),
    );
    const stored = new Set<string>();
    // Deliveries counted by consumer sequence: a filtered consumer's stream sequence may move past
    // messages it skipped without delivering them.
    for await (const info of jsm.consumers.list(topology.commandsStream)) if (info.delivered.consumer_seq > 0) stored.add(info.name);
    // The tenants spread over more than one partition; the base consumer got none of them.
    expect(stored.size).toBeGreaterThan(1);
    expect(stored.has(topology.consumerName)).toBe(false);
    await waitFor(
      () => commandConsumersState(jsm, topology.commandsStream, topology.consumerName),
      (c) => c.ackPending === 0 && c.pending === 0,
      15_000,
      "all acked",
    );
  });

  it("when a subject outside the layout arrives on a partitioned stream, then the base consumer takes it with its subject as published", async () => {
    const topology = newTopology(4);
    const state = await ensureTimerTopology(jsm, { ...topology, serverVersion: VERSION });
    const processor = await startConsumer(topology, state.sources);
    const odd = ["commands.schedule.five.0", "commands.schedule", "commands.schedule.a.b.c"];

    for (const subject of odd) await jetstream(nc).publish(`${topology.subjectPrefix}.${subject}`, "odd");

    await waitFor(
      () => processor.received.length,
      (n) => n === odd.length,
      15_000,
      "every odd subject received",
    );
    expect(processor.received.map((r) => r.subject)).toEqual(odd.map((s) => `${topology.subjectPrefix}.${s}`));
    const base = await jsm.consumers.info(topology.commandsStream, topology.consumerName);
    expect(base.delivered.stream_seq).toBe(odd.length);
  });

  it("when a stream made without partitions holds commands, then it is partitioned, and the stored and the new commands are all consumed", async () => {
    const topology = newTopology(4);
    const old = await ensureTimerTopology(jsm, { ...topology, partitions: 1, serverVersion: VERSION });
    expect(old.sources).toHaveLength(1);
    await publish(topology, ["old-a", "old-b"]);

    const state = await ensureTimerTopology(jsm, { ...topology, serverVersion: VERSION });

    expect(state.created).toBe(true);
    expect(state.sources).toHaveLength(5);
    expect((await jsm.streams.info(topology.commandsStream)).config.subject_transform?.src).toBe(`${topology.subjectPrefix}.commands.*.*`);
    const processor = await startConsumer(topology, state.sources);
    await publish(topology, tenants);
    await waitFor(
      () => processor.received.length,
      (n) => n === tenants.length + 2,
      15_000,
      "stored and new commands received",
    );
    expect(processor.received.map((r) => r.subject)).toEqual(
      expect.arrayContaining([`${topology.subjectPrefix}.commands.schedule.old-a`, `${topology.subjectPrefix}.commands.schedule.old-b`]),
    );
    // A second ensure finds everything in place.
    expect((await ensureTimerTopology(jsm, { ...topology, serverVersion: VERSION })).created).toBe(false);
  });

  it("when the server predates subject transforms, then the stream is made without partitions and one consumer takes every command", async () => {
    const topology = newTopology(4);
    const state = await ensureTimerTopology(jsm, { ...topology, serverVersion: "2.9.25" });

    expect(state.sources).toEqual([{ consumer: topology.consumerName, partitioned: false, stem: `${topology.subjectPrefix}.commands.` }]);
    expect((await jsm.streams.info(topology.commandsStream)).config.subject_transform).toBeUndefined();
    const processor = await startConsumer(topology, state.sources);
    await publish(topology, tenants.slice(0, 3));
    await waitFor(
      () => processor.received.length,
      (n) => n === 3,
      15_000,
      "every command received",
    );
  });
});
