import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { CommandSettlement, DeliveredCommand } from "../../src/app/commands/timer-command-processor.js";
import { JetStreamAckTracker, JetStreamPublishError } from "../../src/adapters/nats/jetstream-ack-tracker.js";
import { ensureTimerTopology, type TimerTopology } from "../../src/adapters/nats/jetstream-topology.js";
import { NatsCommandConsumer } from "../../src/adapters/nats/nats-command-consumer.js";
import { RecordingLogger } from "../support/fakes/recording-logger.js";
import { NatsServerProcess } from "../support/nats-server.js";
import { waitUntil } from "../support/wait-for.js";

/**
 * The NATS adapters in process, against a real nats-server: the command consumer's buffering,
 * micro-batches, settlements, drain on stop and restart; the publisher's ack tracking and time-outs.
 * The processor is a stand-in that records what it got and answers as told.
 */

const decoder = new TextDecoder();

class ScriptedProcessor {
  readonly batches: string[][] = [];
  readonly deliveries = new Map<string, number>();
  /** What to answer for a body; ack by default. */
  answer: (body: string, deliveryCount: number) => CommandSettlement = () => ({ kind: "ack" });
  /** Holds every batch until released, to let messages pile up in the consumer's buffer. */
  gate: Promise<void> = Promise.resolve();
  /** Batches handed to process, finished or not. */
  started = 0;

  async process(batch: readonly DeliveredCommand[]): Promise<CommandSettlement[]> {
    this.started++;
    await this.gate;
    const bodies = batch.map((m) => decoder.decode(m.body));
    this.batches.push(bodies);
    batch.forEach((m, i) => this.deliveries.set(bodies[i]!, m.deliveryCount));
    return batch.map((m, i) => this.answer(bodies[i]!, m.deliveryCount));
  }

  get received(): string[] {
    return this.batches.flat();
  }
}

describe("NATS adapters against a real nats-server", () => {
  let server: NatsServerProcess;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let topology: TimerTopology;
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
  beforeEach(async () => {
    run++;
    topology = { subjectPrefix: `t${run}`, commandsStream: `CMD_${run}`, eventsStream: `EVT_${run}`, consumerName: `c${run}` };
    await ensureTimerTopology(jsm, topology);
  });

  const publishCommands = async (bodies: readonly string[]) => {
    const js = jetstream(nc);
    await Promise.all(bodies.map((body) => js.publish(`${topology.subjectPrefix}.commands.schedule.acme`, body)));
  };
  const pending = async () => (await jsm.consumers.info(topology.commandsStream, topology.consumerName)).num_pending;
  const unacked = async () => (await jsm.consumers.info(topology.commandsStream, topology.consumerName)).num_ack_pending;

  describe("NatsCommandConsumer", () => {
    let processor: ScriptedProcessor;
    let consumer: NatsCommandConsumer;
    let logger: RecordingLogger;
    let missing = 0;

    beforeEach(() => {
      processor = new ScriptedProcessor();
      logger = new RecordingLogger();
      missing = 0;
      consumer = new NatsCommandConsumer(jetstream(nc), processor, {
        stream: topology.commandsStream,
        consumer: topology.consumerName,
        logger,
        onMissingConsumer: () => missing++,
      });
    });
    afterEach(async () => {
      await consumer.stop();
    });

    it("when commands arrive, then each is processed once, in stream order, and acked", async () => {
      const bodies = Array.from({ length: 50 }, (_, i) => `cmd-${i}`);
      await consumer.start();
      await publishCommands(bodies);

      await waitUntil(
        async () => processor.received.length === 50 && (await unacked()) === 0 && (await pending()) === 0,
        15_000,
        "the adapters to settle",
      );

      expect(processor.received).toEqual(bodies);
      expect(consumer.pulling).toBe(true);
    });

    it("when messages arrive while a batch is being stored, then they are buffered and come as the next batch", async () => {
      let release!: () => void;
      processor.gate = new Promise((r) => (release = r));
      await consumer.start();
      await publishCommands(["first"]);
      await new Promise((r) => setTimeout(r, 200));
      await publishCommands(Array.from({ length: 20 }, (_, i) => `later-${i}`));
      await new Promise((r) => setTimeout(r, 300));

      release();
      await waitUntil(() => processor.received.length === 21, 15_000, "the adapters to settle");

      // The first batch held everything delivered before it was released: far fewer batches than messages.
      expect(processor.batches.length).toBeLessThanOrEqual(3);
      expect(processor.received).toEqual(["first", ...Array.from({ length: 20 }, (_, i) => `later-${i}`)]);
    });

    it("when a batch is being stored, then the next one is handed over meanwhile, and a third only once the first is settled", async () => {
      let release!: () => void;
      processor.gate = new Promise((r) => (release = r));
      await consumer.start();
      await publishCommands(["first"]);
      await waitUntil(() => processor.started === 1, 15_000, "the first batch handed over");
      await publishCommands(["second"]);
      await waitUntil(() => processor.started === 2, 15_000, "the second batch handed over");
      await publishCommands(["third"]);
      await waitUntil(async () => (await unacked()) === 3, 15_000, "the third message delivered to the consumer");
      await new Promise((resolve) => setImmediate(resolve));
      expect(processor.started).toBe(2);

      release();
      await waitUntil(() => processor.received.length === 3, 15_000, "the adapters to settle");

      expect(processor.received).toEqual(["first", "second", "third"]);
      await waitUntil(async () => (await unacked()) === 0, 15_000, "every message acked");
    });

    it("when the processor says nak with a delay, then the message is redelivered after it with a higher delivery count", async () => {
      processor.answer = (body, count) => (body === "flaky" && count === 1 ? { kind: "nak", delayMs: 300 } : { kind: "ack" });
      await consumer.start();
      const sentAt = Date.now();
      await publishCommands(["flaky"]);

      await waitUntil(() => processor.deliveries.get("flaky") === 2, 15_000, "the adapters to settle");

      expect(Date.now() - sentAt).toBeGreaterThanOrEqual(300);
      expect(processor.received).toEqual(["flaky", "flaky"]);
    });

    it("when the processor says term, then the message is never delivered again", async () => {
      processor.answer = () => ({ kind: "term", reason: "INVALID_JSON" });
      await consumer.start();
      await publishCommands(["poison"]);

      await waitUntil(async () => processor.received.length === 1 && (await unacked()) === 0, 15_000, "the adapters to settle");
      await new Promise((r) => setTimeout(r, 500));

      expect(processor.received).toEqual(["poison"]);
      expect(await pending()).toBe(0);
    });

    it("when the processor throws, then the batch is nak'ed and redelivered, and the consumer goes on", async () => {
      let failures = 1;
      const original = processor.process.bind(processor);
      processor.process = async (batch) => {
        if (failures-- > 0) throw new Error("storage exploded");
        return original(batch);
      };
      await consumer.start();
      await publishCommands(["survivor"]);

      await waitUntil(() => processor.deliveries.get("survivor") === 2, 20_000, "the adapters to settle");

      expect(logger.entries.some((e) => e.message === "command batch failed; it will be redelivered")).toBe(true);
    });

    it("when stopped with messages in hand, then they are processed and settled before stop resolves", async () => {
      let release!: () => void;
      processor.gate = new Promise((r) => (release = r));
      await consumer.start();
      await publishCommands(Array.from({ length: 10 }, (_, i) => `held-${i}`));
      await waitUntil(async () => (await unacked()) === 10, 15_000, "the adapters to settle");

      const stopped = consumer.stop();
      release();
      await stopped;

      expect(processor.received).toHaveLength(10);
      await waitUntil(async () => (await unacked()) === 0, 15_000, "the adapters to settle");
      expect(consumer.pulling).toBe(false);
    });

    it("when the durable consumer is deleted and recreated, then a restart pulls again and nothing is lost", async () => {
      await consumer.start();
      await publishCommands(["before"]);
      await waitUntil(() => processor.received.includes("before"), 15_000, "the adapters to settle");

      await jsm.consumers.delete(topology.commandsStream, topology.consumerName);
      await ensureTimerTopology(jsm, topology);
      await consumer.restart();
      await publishCommands(["after"]);

      await waitUntil(() => processor.received.includes("after"), 15_000, "the adapters to settle");
      expect(consumer.pulling).toBe(true);
    });
  });

  describe("JetStreamAckTracker", () => {
    it("when the stream acks, then publish resolves, and a republish with the same id is acked as a duplicate", async () => {
      const tracker = new JetStreamAckTracker(nc, 2_000);
      const subject = `${topology.subjectPrefix}.events.due.acme`;
      try {
        await tracker.publish(subject, new TextEncoder().encode("{}"), "id-1", topology.eventsStream);
        await tracker.publish(subject, new TextEncoder().encode("{}"), "id-1", topology.eventsStream);
      } finally {
        tracker.close();
      }

      const info = await jsm.streams.info(topology.eventsStream);
      expect(info.state.messages).toBe(1);
    });

    it("when many publishes are in flight, then each resolves on its own ack", async () => {
      const tracker = new JetStreamAckTracker(nc, 5_000);
      const subject = `${topology.subjectPrefix}.events.due.acme`;
      try {
        await Promise.all(
          Array.from({ length: 2_000 }, (_, i) =>
            tracker.publish(subject, new TextEncoder().encode(`${i}`), `m-${i}`, topology.eventsStream),
          ),
        );
      } finally {
        tracker.close();
      }

      expect((await jsm.streams.info(topology.eventsStream)).state.messages).toBe(2_000);
    });

    it("when no stream captures the subject, then publish rejects with JetStreamPublishError within the time-out", async () => {
      const tracker = new JetStreamAckTracker(nc, 500);
      const startedAt = Date.now();
      try {
        await expect(tracker.publish("nowhere.at.all", new TextEncoder().encode("{}"), "x", topology.eventsStream)).rejects.toBeInstanceOf(
          JetStreamPublishError,
        );
      } finally {
        tracker.close();
      }
      expect(Date.now() - startedAt).toBeLessThan(5_000);
    });

    it("when the ack names another stream than expected, then publish rejects", async () => {
      const tracker = new JetStreamAckTracker(nc, 2_000);
      try {
        await expect(
          tracker.publish(`${topology.subjectPrefix}.events.due.acme`, new TextEncoder().encode("{}"), "y", topology.commandsStream),
        ).rejects.toBeInstanceOf(JetStreamPublishError);
      } finally {
        tracker.close();
      }
    });
  });
});
