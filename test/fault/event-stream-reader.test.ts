import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterEach, describe, expect, it } from "vitest";
import { EventStreamReader } from "../support/event-stream-reader.js";
import { NatsCluster } from "../support/nats-cluster.js";

// The fault tests' reader of the events stream must keep reading when the cluster node holding its
// consumer goes down for good: a fetch from there never ends by itself (@nats-io/jetstream 3.4).
const STREAM = "READER_EVENTS";

let cluster: NatsCluster | undefined;
let connection: NatsConnection | undefined;
let reader: EventStreamReader | undefined;

afterEach(async () => {
  await reader?.close();
  await connection?.close();
  await cluster?.dispose();
  [reader, connection, cluster] = [undefined, undefined, undefined];
});

function dueTimeReached(i: number): string {
  const at = new Date().toISOString();
  return JSON.stringify({
    id: `e${i}`,
    type: "DueTimeReached",
    payload: { tenantId: "acme", serviceCallId: `c${i}`, dueAt: at, reachedAt: at },
  });
}

describe("EventStreamReader on a cluster", () => {
  it("when the node holding the reader's consumer stops and stays down, then the reader goes on reading from the others", async () => {
    cluster = await NatsCluster.start(3);
    const urls = cluster.nodes.map((node) => node.url);
    connection = await connect({ servers: urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    const jsm = await jetstreamManager(connection);
    await jsm.streams.add({ name: STREAM, subjects: ["reader.events"], num_replicas: 3 });
    const js = jetstream(connection);
    // Retried while the stream elects a new leader after the stop.
    const publish = async (i: number): Promise<void> => {
      for (;;) {
        const ok = await js.publish("reader.events", dueTimeReached(i), { msgID: `e${i}`, timeout: 2_000 }).then(
          () => true,
          () => false,
        );
        if (ok) return;
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    for (let i = 0; i < 10; i++) await publish(i);
    reader = await EventStreamReader.start(urls, { stream: STREAM });
    await reader.waitUntil(() => reader!.events.length === 10, 10_000, "first 10 events read");
    const [consumer] = await jsm.consumers.list(STREAM).next();
    const host = cluster.nodes.find((node) => node.name === consumer?.cluster?.leader);

    await host!.stop(true);
    for (let i = 10; i < 20; i++) await publish(i);

    await reader.waitUntil(() => reader!.events.length === 20, 30_000, "all 20 events read");
    expect(reader.events.map((event) => event.serviceCallId)).toEqual(Array.from({ length: 20 }, (_, i) => `c${i}`));
  }, 180_000); // a cluster that does not form is started again (NatsCluster.start)
});
