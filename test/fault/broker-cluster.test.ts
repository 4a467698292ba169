import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsCluster, type NatsClusterNode } from "../support/nats-cluster.js";
import { TimerClient } from "../support/timer-client.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { EventStreamReader } from "../support/event-stream-reader.js";
import { TENANT, earlyEvents, mismatchedEvents, planTimers, scheduleAll, waitUntilStored } from "./fault-support.js";
import { waitUntil } from "../support/wait-for.js";

const TIMERS = 2_000;
/** Replicated publishes are slow on a loaded machine: the first timer is due this long after scheduling starts. */
const FIRST_DUE_MS = 15_000;
/**
 * The timers are due over this long: long enough that the first node is back and caught up, and the
 * second stopped, while a good part of them is still to fire (with 10 s, the second stop often came
 * after the last one had fired, and tested nothing).
 */
const BURST_MS = 20_000;
/** The service's replicated streams: the lease bucket's too, since firing needs the lease. */
const STREAMS = ["TIMER_COMMANDS", "TIMER_EVENTS", "KV_timer_leases"];

/**
 * CONTRACT §6: with a three-node broker cluster and TIMER_STREAM_REPLICAS=3, stopping any one node
 * loses nothing and the service keeps firing. The service gets all three URLs; the node stopped
 * first is the events stream's leader (forcing an election under load), the second another node
 * once the first is back and caught up.
 *
 * Progress is measured on the events stream itself (its message count); the events are read once,
 * after the second stop, by a reader connected to the surviving nodes only. A reader that spans the
 * stops can hang for good when the node it is connected to, holding its R1 consumer too, stays
 * down (docs/reliability.md, "Clustered broker"): that made this test fail in about 2 of 7 runs.
 */
describe("clustered broker with R3 streams", () => {
  let cluster: NatsCluster;
  let service: TimerServiceProcess;
  let client: TimerClient;
  let reader: EventStreamReader | undefined;
  let jsm: JetStreamManager;

  beforeAll(async () => {
    cluster = await NatsCluster.start(3);
    service = await TimerServiceProcess.start(
      cluster.urls,
      { TIMER_STREAM_REPLICAS: "3", TIMER_POLLING_INTERVAL: "500" },
      { waitReady: false },
    );
    // Creating R3 streams takes a Raft election each: allow for a loaded machine.
    await service.waitUntilReady(60_000).catch((error: Error) => {
      throw new Error(`${error.message}\n${service.logLines.slice(-20).join("\n")}`);
    });
    // The producer knows every node, so that stopping the one it is on only moves it.
    client = await TimerClient.connect(cluster.nodes.map((node) => node.url));
    jsm = await jetstreamManager(client.connection, { timeout: 5_000 });
  }, 180_000); // a cluster that does not form is started again (NatsCluster.start)

  afterAll(async () => {
    await reader?.close();
    await client?.close().catch(() => undefined);
    await service?.dispose();
    await cluster?.dispose();
  });

  it("when one node is stopped mid-burst, brought back, and then another is stopped, then every timer fires exactly once by Nats-Msg-Id", async () => {
    for (const stream of ["TIMER_COMMANDS", "TIMER_EVENTS"]) {
      expect((await jsm.streams.info(stream)).config.num_replicas, `${stream} replicas`).toBe(3);
    }
    const scheduledAtMs = Date.now();
    const timers = planTimers("r3", TIMERS, scheduledAtMs, FIRST_DUE_MS, FIRST_DUE_MS + BURST_MS);
    await scheduleAll(client, timers, { concurrency: 200 });
    await waitUntilStored(client, service, TIMERS, FIRST_DUE_MS);
    console.info(`broker-cluster: ${TIMERS} timers scheduled and stored in ${Date.now() - scheduledAtMs} ms`);
    expect(Date.now(), "every timer must be stored before the first is due").toBeLessThan(timers[0]!.dueAtMs);

    await waitUntil(async () => (await storedEvents(jsm)) >= TIMERS * 0.2, 40_000, "a fifth of the timers fired");
    const first = await streamLeader(cluster, jsm, "TIMER_EVENTS");
    const firedAtFirstStop = await storedEvents(jsm);
    await first.stop(true);
    await new Promise((r) => setTimeout(r, 2_000));
    await cluster.restart(first);
    // One node at a time: the second stop must leave every stream two current replicas (a quorum).
    await cluster.waitUntilReplicasCurrent(STREAMS, 30_000);

    await waitUntil(async () => (await storedEvents(jsm)) >= TIMERS * 0.6, 40_000, "three fifths of the timers fired");
    const leaderNow = await streamLeader(cluster, jsm, "TIMER_EVENTS");
    const second = leaderNow !== first ? leaderNow : cluster.nodes.find((node) => node !== first)!;
    const firedAtSecondStop = await storedEvents(jsm);
    await second.stop(true);
    const stoppedAtMs = Date.now();
    expect(firedAtSecondStop, "the second stop must come while timers are still to fire").toBeLessThan(TIMERS);

    // The whole stream from its first message, through the nodes still up (once they have a meta
    // leader again: the stopped node may have led the meta layer).
    const survivors = cluster.nodes.filter((node) => node.running);
    await cluster.waitUntilJetStream(survivors);
    const stored = await EventStreamReader.start(survivors.map((node) => node.url));
    reader = stored;
    await stored.waitForTimers(
      TENANT,
      timers.map((t) => t.serviceCallId),
      120_000,
    );
    console.info(
      `broker-cluster: stopped ${first.name} (events leader) at ${firedAtFirstStop}/${TIMERS} fired, restarted it; ` +
        `stopped ${second.name} at ${firedAtSecondStop}/${TIMERS}; ${stored.events.length} events stored, all read back ` +
        `${Date.now() - stoppedAtMs} ms after the second stop; the service ${serviceFaults(service)}`,
    );
    const byMsgId = new Map<string, number>();
    for (const event of stored.events) byMsgId.set(event.msgId ?? "(none)", (byMsgId.get(event.msgId ?? "(none)") ?? 0) + 1);
    expect([...byMsgId.entries()].filter(([, count]) => count > 1)).toEqual([]);
    expect(byMsgId.size).toBe(TIMERS);
    expect(stored.firedTimers).toBe(TIMERS);
    expect(stored.duplicates).toBe(0);
    expect(stored.lostTail).toEqual([]);
    expect(earlyEvents(stored.events)).toEqual([]);
    expect(mismatchedEvents(stored.events, timers)).toEqual([]);
  }, 240_000);
});

/** What the service's log says it went through: reconnects, and poll rounds whose publishes failed. */
function serviceFaults(service: TimerServiceProcess): string {
  const messages = service.logs().map((line) => String(line.msg));
  const count = (prefix: string): number => messages.filter((msg) => msg.startsWith(prefix)).length;
  return `reconnected ${count("reconnected to NATS")} times, had ${count("publishing due events failed")} failed publish rounds`;
}

/** Messages in the events stream (each a timer's DueTimeReached here); 0 while it does not answer. */
async function storedEvents(jsm: JetStreamManager): Promise<number> {
  return jsm.streams.info("TIMER_EVENTS").then(
    (info) => info.state.messages,
    () => 0,
  );
}

/** The node that leads `stream` now (its server name), waiting out an election in progress. */
async function streamLeader(cluster: NatsCluster, jsm: JetStreamManager, stream: string): Promise<NatsClusterNode> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const leader = await jsm.streams.info(stream).then(
      (info) => info.cluster?.leader,
      () => undefined,
    );
    const node = cluster.nodes.find((candidate) => candidate.name === leader && candidate.running);
    if (node !== undefined) return node;
    if (Date.now() > deadline) throw new Error(`${stream} has no leader among the running nodes (last: ${leader})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
