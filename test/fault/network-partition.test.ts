import { acquireHostLock, MOUNT_NAMESPACE_LOCK } from "../support/host-lock.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerClient } from "../support/timer-client.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { EventStreamReader, type StreamedDueEvent } from "../support/event-stream-reader.js";
import { ServiceNamespace } from "../support/network-namespace.js";
import { DelayProxy } from "../support/delay-proxy.js";
import { TEST_DATABASE_URL, uniqueSchema } from "../support/test-postgres.js";
import { TENANT, commandBacklog, earlyEvents, mismatchedEvents, planTimers, scheduleAll, type PlannedTimer } from "./fault-support.js";
import { waitFor, waitUntil } from "../support/wait-for.js";

/**
 * Partitions between the service and the broker (and Postgres), not a broker that is down: the
 * service runs in a network namespace of its own (test/support/network-namespace.ts), joined to the
 * root namespace by a veth pair; the broker, Postgres, the producer and the stream reader stay on
 * the root namespace's loopback. /readyz is read from inside the service's namespace (curl over its
 * own loopback, which no partition touches).
 *
 * Runs as root only; elsewhere it skips and says why. PARTITION_NETEM_SECONDS (default 20, to keep
 * CI short) sets the delay-and-loss window; the full 60 s:
 * `PARTITION_NETEM_SECONDS=60 npx vitest run test/fault/network-partition.test.ts`. This kernel has
 * no sch_netem, so the delay is a relay in this process (DelayProxy, 200 ms each way) and the loss
 * is iptables `statistic` on the veth (5 % of packets each way, real TCP retransmits).
 */
const unavailable = ServiceNamespace.unavailableReason();
if (unavailable !== undefined) console.warn(`network-partition tests skipped: ${unavailable}`);

const CUT_MS = 30_000;
const NETEM_MS = Number(process.env.PARTITION_NETEM_SECONDS ?? "20") * 1_000;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
});

// Held for the whole file: its namespaces' processes would keep a loop ext4 of the storage-fault
// test mounted (see MOUNT_NAMESPACE_LOCK), and one wait beats that test starving between ours.
let releaseMountLock: (() => void) | undefined;
beforeAll(async () => {
  if (unavailable === undefined) releaseMountLock = await acquireHostLock(MOUNT_NAMESPACE_LOCK);
}, 300_000);
afterAll(() => releaseMountLock?.());

interface Stack {
  readonly nats: NatsServerProcess;
  readonly ns: ServiceNamespace;
  readonly service: TimerServiceProcess;
  readonly client: TimerClient;
  readonly reader: EventStreamReader;
}

/** The broker on loopback, the service (SQLite) in a namespace of its own, producer and reader on loopback. */
async function startStack(
  label: string,
  options: { viaProxy?: DelayProxy | ((natsPort: number) => Promise<DelayProxy>) } = {},
): Promise<Stack & { proxy?: DelayProxy }> {
  const nats = await NatsServerProcess.start();
  cleanups.push(() => nats.dispose());
  const ns = ServiceNamespace.create(label);
  cleanups.push(() => ns.dispose());
  const proxy = typeof options.viaProxy === "function" ? await options.viaProxy(nats.port) : options.viaProxy;
  if (proxy !== undefined) cleanups.push(() => proxy.close());
  const brokerUrl = proxy === undefined ? ns.reach(nats.url) : `nats://${ns.hostAddress}:${proxy.port}`;
  const service = await startServiceIn(ns, brokerUrl, { TIMER_STORE: "sqlite" });
  const client = await TimerClient.connect(nats.url);
  cleanups.push(() => client.close());
  const reader = await EventStreamReader.start(nats.url);
  cleanups.push(() => reader.close());
  return { nats, ns, service, client, reader, ...(proxy === undefined ? {} : { proxy }) };
}

async function startServiceIn(ns: ServiceNamespace, brokerUrl: string, env: Record<string, string>): Promise<TimerServiceProcess> {
  const service = await TimerServiceProcess.start(
    brokerUrl,
    { TIMER_POLLING_INTERVAL: "500", TIMER_HTTP_HOST: "127.0.0.1", ...env },
    { waitReady: false, command: ns.wrap([process.execPath, "dist/main.js"]) },
  );
  cleanups.push(() => service.dispose());
  await waitForReadyzIn(ns, service, 200, 20_000);
  return service;
}

async function waitForReadyzIn(ns: ServiceNamespace, service: TimerServiceProcess, status: number, timeoutMs: number): Promise<number> {
  const started = Date.now();
  await waitFor(() => ns.httpGet(`http://127.0.0.1:${service.httpPort}/readyz`), {
    until: (reply) => reply.status === status,
    timeoutMs,
    everyMs: 200,
    what: `/readyz (inside ${ns.name}) to be ${status}`,
  });
  return Date.now() - started;
}

/** Reads /readyz from inside the namespace every 500 ms until stopped: [ms since start, status]. */
function probeReadyz(
  ns: ServiceNamespace,
  service: TimerServiceProcess,
): { stop: () => Promise<[number, number][]>; first503Body: () => string } {
  const samples: [number, number][] = [];
  let first503Body = "";
  const started = Date.now();
  let stopped = false;
  const running = (async () => {
    while (!stopped) {
      const at = Date.now();
      const { status, body } = await ns.httpGet(`http://127.0.0.1:${service.httpPort}/readyz`, 2);
      samples.push([at - started, status]);
      if (status === 503 && first503Body === "") first503Body = body;
      await new Promise((r) => setTimeout(r, Math.max(0, 500 - (Date.now() - at))));
    }
  })();
  return {
    first503Body: () => first503Body,
    stop: async () => {
      stopped = true;
      await running;
      return samples;
    },
  };
}

/** Waits until the durable command consumer has nothing pending or unacked. */
async function waitConsumerDrained(client: TimerClient, timeoutMs: number): Promise<void> {
  await waitUntil(
    async () => {
      const backlog = await commandBacklog(client);
      return backlog.pending === 0 && backlog.ackPending === 0;
    },
    timeoutMs,
    "command consumer drained",
  );
}

function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** `timer_last_poll_timestamp_seconds` of a service in a namespace (0 when unanswered). */
async function lastPollSeconds(ns: ServiceNamespace, service: TimerServiceProcess): Promise<number> {
  const { body } = await ns.httpGet(`http://127.0.0.1:${service.httpPort}/metrics`);
  const line = body.split("\n").find((l) => l.startsWith("timer_last_poll_timestamp_seconds "));
  return line === undefined ? 0 : Number(line.split(" ")[1]);
}

/** Timers still Scheduled whose live claim belongs to the instance with process id `pid`. */
async function claimsHeldBy(schema: string, pid: number): Promise<string[]> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    const result = await client.query<{ id: string }>(
      `SELECT service_call_id AS id FROM ${schema}.timer_schedules WHERE state = 'Scheduled' AND claimed_by LIKE $1 AND claimed_until > $2`,
      [`%/${pid}/%`, Date.now()],
    );
    return result.rows.map((row) => row.id);
  } finally {
    await client.end();
  }
}

/** Lag of the first event of each timer: broker store time − due time. */
function lags(reader: EventStreamReader, timers: readonly PlannedTimer[]): number[] {
  return timers.map((t) => (reader.eventsOf(TENANT, t.serviceCallId)[0] as StreamedDueEvent).storedAtMs - t.dueAtMs);
}

describe.skipIf(unavailable !== undefined)("network partition (netns, veth, root only)", () => {
  it("when the link to the broker is cut for 30 s during ingest and firing, then /readyz is 503 during the cut and 200 after, nothing is lost and nothing fires early", async () => {
    const { ns, service, client, reader } = await startStack("cut");
    const t0 = Date.now();
    // Due before, during and after the cut (the cut starts about 4 s in and lasts 30 s).
    const before = planTimers("before", 300, t0, 1_000, 50_000);
    await scheduleAll(client, before);
    await waitConsumerDrained(client, 15_000);
    await waitUntil(() => reader.firedTimers > 0, 10_000, "firing under way before the cut");

    const probe = probeReadyz(ns, service);
    const cutAt = Date.now();
    ns.cut();
    // Ingest during the cut: the producer reaches the broker (loopback), the service does not.
    const during = planTimers("during", 200, cutAt, 5_000, 25_000);
    await scheduleAll(client, during);
    const firedAtCut = reader.firedTimers;
    await waitUntil(() => Date.now() >= cutAt + CUT_MS, CUT_MS + 5_000, "the cut lasts 30 s");
    const firedDuringCut = reader.firedTimers - firedAtCut;
    ns.heal();
    const healedAt = Date.now();
    const readyAfterMs = await waitForReadyzIn(ns, service, 200, 60_000);
    const samples = await probe.stop();

    const after = planTimers("after", 100, Date.now(), 1_000, 3_000);
    await scheduleAll(client, after);
    const all = [...before, ...during, ...after];
    await reader.waitForTimers(
      TENANT,
      all.map((t) => t.serviceCallId),
      60_000,
    );

    const inCut = samples.filter(([at]) => at < healedAt - cutAt);
    const first503 = inCut.find(([, status]) => status === 503)?.[0];
    const dueInCut = before.filter((t) => t.dueAtMs > cutAt && t.dueAtMs < healedAt);
    console.info(
      `partition 30 s: /readyz 503 first ${first503 ?? "never"} ms after the cut (${inCut.filter(([, s]) => s === 503).length}/${inCut.length} probes during the cut were 503), ` +
        `checks then ${probe.first503Body()}; 200 again ${readyAfterMs} ms after the heal; ${firedDuringCut} events reached the stream during the cut (published before it, acked late); ` +
        `timers due during the cut fired ${Math.round(percentile(lags(reader, dueInCut), 50))} ms (p50) / ${Math.round(Math.max(...lags(reader, dueInCut)))} ms (max) late; ` +
        `commands sent during the cut fired ${Math.round(Math.max(...lags(reader, during)))} ms late at most; duplicates ${reader.duplicates}`,
    );
    expect(first503, "/readyz went 503 during the cut").toBeDefined();
    expect(earlyEvents(reader.events)).toEqual([]);
    expect(mismatchedEvents(reader.events, all)).toEqual([]);
  }, 180_000);

  it(
    `when the link to the broker has 200 ms delay and 5 % loss for ${NETEM_MS / 1000} s, then every timer fires, none early, and the lag is reported`,
    async () => {
      const { ns, service, client, reader, proxy } = await startStack("netem", { viaProxy: (port) => DelayProxy.start(port) });
      proxy!.delayMs = 200;
      ns.loss(5);
      const netemAt = Date.now();
      const probe = probeReadyz(ns, service);
      // 20 timers a second, due across the whole window; their commands too go over the bad link.
      const timers = planTimers("netem", Math.round(NETEM_MS / 50), netemAt, 1_000, NETEM_MS - 1_000);
      await scheduleAll(client, timers, { concurrency: 20 });
      await waitUntil(() => Date.now() >= netemAt + NETEM_MS, NETEM_MS + 5_000, "the netem window");
      const firedInWindow = timers.filter((t) => reader.hasFired(TENANT, t.serviceCallId)).length;
      proxy!.delayMs = 0;
      ns.clearLoss();
      const samples = await probe.stop();
      await reader.waitForTimers(
        TENANT,
        timers.map((t) => t.serviceCallId),
        60_000,
      );

      const lag = lags(reader, timers);
      console.info(
        `200 ms delay each way + 5% loss for ${NETEM_MS / 1000} s: ${firedInWindow}/${timers.length} fired inside the window; ` +
          `lag (broker store time − due) p50 ${Math.round(percentile(lag, 50))} ms, p99 ${Math.round(percentile(lag, 99))} ms, max ${Math.round(Math.max(...lag))} ms; ` +
          `/readyz 200 in ${samples.filter(([, s]) => s === 200).length}/${samples.length} probes; duplicates ${reader.duplicates}`,
      );
      expect(earlyEvents(reader.events)).toEqual([]);
      expect(mismatchedEvents(reader.events, timers)).toEqual([]);
    },
    NETEM_MS + 120_000,
  );

  it.for<{ cut: string; brokerFirst: boolean }>([
    { cut: "the broker, then Postgres 1.5 s later", brokerFirst: true },
    { cut: "Postgres only", brokerFirst: false },
  ])(
    "when one of two Postgres instances loses $cut, then its claims expire and the other instance fires every timer",
    { timeout: 150_000 },
    async ({ brokerFirst }, { skip }) => {
      const postgres = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 2_000 });
      const reachable = await postgres.connect().then(
        () => true,
        () => false,
      );
      await postgres.end().catch(() => undefined);
      if (!reachable) {
        console.warn(`Postgres partition test skipped: ${TEST_DATABASE_URL} is not reachable`);
        return skip();
      }
      const databasePort = Number(new URL(TEST_DATABASE_URL).port || "5432");
      const nats = await NatsServerProcess.start();
      cleanups.push(() => nats.dispose());
      const ns = ServiceNamespace.create("pg");
      cleanups.push(() => ns.dispose());
      const schema = uniqueSchema("part");
      const shared = { TIMER_STORE: "postgres", TIMER_DATABASE_SCHEMA: schema, TIMER_CLAIM_TTL_MS: "3000", TIMER_BATCH_SIZE: "20" };
      const cut = await startServiceIn(ns, ns.reach(nats.url), { ...shared, TIMER_DATABASE_URL: ns.reach(TEST_DATABASE_URL) });
      const other = await TimerServiceProcess.start(nats.url, {
        ...shared,
        TIMER_DATABASE_URL: TEST_DATABASE_URL,
        TIMER_POLLING_INTERVAL: "500",
      });
      cleanups.push(() => other.dispose()); // drops the schema
      const client = await TimerClient.connect(nats.url);
      cleanups.push(() => client.close());
      const reader = await EventStreamReader.start(nats.url);
      cleanups.push(() => reader.close());

      const t0 = Date.now();
      const timers = planTimers("pg", 400, t0, 2_000, 25_000);
      await scheduleAll(client, timers);
      await waitConsumerDrained(client, 20_000);
      await waitUntil(() => reader.firedTimers >= 40, 15_000, "both instances firing before the cut");

      const probe = probeReadyz(ns, cut);
      const cutAt = Date.now();
      // Losing the broker first makes the instance hold claims (taken, publishes stuck) when Postgres
      // goes too: it can neither publish nor release them, so they must expire. Postgres only: its
      // claim or mark in flight hangs on the dead connection.
      if (brokerFirst) {
        ns.dropPort(nats.port);
        await new Promise((r) => setTimeout(r, 1_500));
      }
      ns.dropPort(databasePort);
      const held = await claimsHeldBy(schema, cut.pid!);
      // Everything due up to the end of the cut must fire meanwhile, by the other instance.
      await waitUntil(() => Date.now() >= t0 + 25_000 + 3_000 + 2_000, 40_000, "the cut outlasts the due times and the claim TTL");
      const missingDuringCut = timers.filter((t) => !reader.hasFired(TENANT, t.serviceCallId));
      const lastPollAtHealS = await lastPollSeconds(ns, cut);
      const healedAt = Date.now();
      ns.undropPort(databasePort);
      if (brokerFirst) ns.undropPort(nats.port);
      const samples = await probe.stop();
      await reader.waitForTimers(
        TENANT,
        timers.map((t) => t.serviceCallId),
        60_000,
      );
      // The cut instance polls again by itself (TCP retransmits reach Postgres once the link is back).
      let lastPollS = 0;
      await waitUntil(
        async () => (lastPollS = await lastPollSeconds(ns, cut)) * 1000 > healedAt,
        90_000,
        "the cut instance polls again after the heal",
      );
      const pollingAgainAfterMs = Date.now() - healedAt;
      const dueInCut = timers.filter((t) => t.dueAtMs > cutAt);
      const lag = lags(reader, dueInCut);
      const stalled = cut
        .logs()
        .filter((line) => line.level === 50 || line.level === 40)
        .map((line) => String(line.msg));
      console.info(
        `Postgres partition (${brokerFirst ? "broker, then Postgres" : "Postgres only"}) of one instance for ${Math.round((healedAt - cutAt) / 1000)} s (claim TTL 3 s): it held ${held.length} live claims when cut; ${timers.length - missingDuringCut.length}/${timers.length} fired before the heal; ` +
          `timers due during the cut fired p50 ${Math.round(percentile(lag, 50))} ms / max ${Math.round(Math.max(...lag))} ms late; duplicates ${reader.duplicates}; ` +
          `cut instance /readyz during the cut: ${samples.filter(([, s]) => s === 503).length}/${samples.length} probes 503; ` +
          `its last poll was ${Math.round((healedAt - lastPollAtHealS * 1000) / 1000)} s old at the heal (alert TimerPollStalled: > 30 s), it polled again ${pollingAgainAfterMs} ms after the heal (last poll ${new Date(lastPollS * 1000).toISOString()}); ` +
          `its warnings: ${[...new Set(stalled)].slice(0, 5).join(" | ")}`,
      );
      expect(missingDuringCut.map((t) => t.serviceCallId)).toEqual([]);
      // Its claims expired and the other instance fired those timers (before the heal, checked above).
      for (const id of held) expect(reader.hasFired(TENANT, id)).toBe(true);
      expect(earlyEvents(reader.events)).toEqual([]);
      expect(mismatchedEvents(reader.events, timers)).toEqual([]);
    },
  );
});
