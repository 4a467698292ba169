import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { NatsServerProcess } from "../../test/support/nats-server.js";
import { TimerServiceProcess } from "../../test/support/timer-service-process.js";
import { EventStreamReader } from "../../test/support/event-stream-reader.js";
import { TEST_DATABASE_URL, dropSchema, uniqueSchema } from "../../test/support/test-postgres.js";
import { explainMissing, lastSequences } from "./crash-loop-diagnostics.js";

/**
 * The crash loop: a load generator publishes ScheduleTimer commands and records each one the
 * commands stream acked (accepted: from then on the service must not lose it), while the service is
 * killed with SIGKILL and the broker killed and restarted at random moments. At the end it waits
 * until every accepted timer fired, reading DueTimeReached from the events stream itself, and counts
 * what was lost, early or stored twice. Used by `npm run crash-loop` and test/fault/crash-loop.test.ts.
 */

export interface CrashLoopOptions {
  /** ScheduleTimer commands to publish (each a distinct timer). */
  readonly timers: number;
  /** SIGKILLs of the service, each followed by a restart on the same database. */
  readonly kills: number;
  /** SIGKILLs of nats-server, each followed by a restart on the same port and store. */
  readonly brokerRestarts: number;
  readonly seed: number;
  /** Commands published per second. */
  readonly rate: number;
  /** Commands in flight (published, ack not yet received). */
  readonly concurrency?: number;
  /** Give up waiting for the last timers when no event arrived for this long. */
  readonly stallMs?: number;
  /** Extra environment of the service. */
  readonly serviceEnv?: Record<string, string>;
  /** `postgres`: the instances share one new schema of TIMER_TEST_DATABASE_URL's database. Default sqlite. */
  readonly store?: "sqlite" | "postgres";
  /** Service processes sharing the consumer (postgres only; SQLite allows one). Each kill picks one at random. */
  readonly instances?: number;
  readonly log?: (line: string) => void;
}

export interface CrashLoopReport {
  /** Commands acked by the commands stream (each one a timer that must fire). */
  readonly timers: number;
  readonly store: "sqlite" | "postgres";
  readonly instances: number;
  readonly kills: number;
  readonly brokerRestarts: number;
  /** Accepted timers without a DueTimeReached in the events stream at the end. */
  readonly lost: number;
  /** Events stored before their dueAt (by the service's reachedAt or the broker's timestamp). */
  readonly early: number;
  /** Envelope ids stored more than once in the events stream. */
  readonly duplicates: number;
  /**
   * DueTimeReached published again under an id already published (a kill between publish and mark,
   * or an expired claim fired by another instance), dropped or not by the duplicate window. Seen by a
   * core subscription, which misses what is published while it is disconnected: a lower bound.
   */
  readonly duplicatePublishes: number;
  readonly durationS: number;
  readonly seed: number;
  /** Events whose dueAt is not the one scheduled, or for timers never published. */
  readonly unexpected: number;
  /** Delay from dueAt to the broker storing the first event, over all timers. */
  readonly lagP50S: number;
  readonly lagP99S: number;
  readonly lagMaxS: number;
  /** Events the reader had read that the events stream no longer held after a broker restart. */
  readonly eventsLostByBroker: number;
}

const TENANT = "crash";
/** Share of timers due in the past (up to 2 s), which fire at once. */
const PAST_SHARE = 0.1;
const MAX_AHEAD_MS = 5_000;
const PUBLISH_TIMEOUT_MS = 5_000;
const RETRY_MS = 250;

/** A small seeded generator (mulberry32): the same seed gives the same plan. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function runCrashLoop(options: CrashLoopOptions): Promise<CrashLoopReport> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const random = seededRandom(options.seed);
  const startedAtMs = Date.now();
  const store = options.store ?? "sqlite";
  const instances = options.instances ?? 1;
  if (store === "sqlite" && instances !== 1)
    throw new Error("crash-loop: SQLite runs one instance per consumer (CONTRACT §6); use --store postgres");
  log(
    `crash-loop: seed ${options.seed}, ${options.timers} timers at ${options.rate}/s, ${options.kills} kills, ${options.brokerRestarts} broker restarts, ` +
      `store ${store}, ${instances} instance(s)`,
  );

  // The plan, drawn up front so that a seed always gives the same load and the same chaos.
  const dueOffsetMs = Float64Array.from({ length: options.timers }, () =>
    random() < PAST_SHARE ? -Math.floor(random() * 2_000) : Math.floor(random() * MAX_AHEAD_MS),
  );
  const actions = shuffle(
    [...Array<"kill">(options.kills).fill("kill"), ...Array<"broker">(options.brokerRestarts).fill("broker")],
    random,
  );
  const chaos = actions
    .map((action) => ({
      action,
      atShare: 0.05 + 0.9 * random(),
      downMs: 300 + Math.floor(random() * 1_500),
      delayMs: Math.floor(random() * 300),
    }))
    .sort((a, b) => a.atShare - b.atShare);

  // Which instance each kill hits, drawn after the plan above so that a seed's plan does not change.
  const victims = chaos.map(() => Math.floor(random() * instances));
  const schema = store === "postgres" ? uniqueSchema("crash") : undefined;
  const storeEnv: Record<string, string> =
    schema === undefined
      ? {}
      : // A short claim TTL: timers a killed instance had claimed are fired by another within seconds.
        { TIMER_STORE: "postgres", TIMER_DATABASE_URL: TEST_DATABASE_URL, TIMER_DATABASE_SCHEMA: schema, TIMER_CLAIM_TTL_MS: "5000" };

  const nats = await NatsServerProcess.start();
  const services: TimerServiceProcess[] = [];
  let producer: NatsConnection | undefined;
  let reader: EventStreamReader | undefined;
  try {
    const serviceEnv = { TIMER_POLLING_INTERVAL: "1000", TIMER_LOG_LEVEL: "warn", ...storeEnv, ...options.serviceEnv };
    // Started one after the other: each waits until ready, so the first creates the topology alone.
    for (let i = 0; i < instances; i++) services.push(await TimerServiceProcess.start(nats.url, serviceEnv));
    producer = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 100, waitOnFirstConnect: true });
    reader = await EventStreamReader.start(nats.url);
    const publishedIds = new Map<string, number>();
    let duePublishes = 0;
    producer.subscribe(`timer.events.due.${TENANT}`, {
      callback: (_error, message) => {
        const msgId = message.headers?.get("Nats-Msg-Id") ?? "";
        duePublishes++;
        publishedIds.set(msgId, (publishedIds.get(msgId) ?? 0) + 1);
      },
    });
    const js = jetstream(producer, { timeout: PUBLISH_TIMEOUT_MS });
    const jsm = await jetstreamManager(producer, { timeout: 2_000 });

    const dueAtMs = new Float64Array(options.timers).fill(Number.NaN);
    const accepted = new Uint8Array(options.timers);
    /** Sequence of each accepted command in the commands stream (for diagnostics). */
    const commandSeq = new Float64Array(options.timers);
    let acceptedCount = 0;
    let publishRetries = 0;
    const loadStartMs = Date.now();
    const encoder = new TextEncoder();

    const publishOne = async (i: number): Promise<void> => {
      const timestampMs = Date.now();
      dueAtMs[i] = timestampMs + dueOffsetMs[i]!;
      const envelope = {
        id: `c-${i}`,
        type: "ScheduleTimer",
        tenantId: TENANT,
        timestampMs,
        payload: { tenantId: TENANT, serviceCallId: `t-${i}`, dueAt: new Date(dueAtMs[i]!).toISOString() },
      };
      const body = encoder.encode(JSON.stringify(envelope));
      // The same command is retried until the stream acks it; its Nats-Msg-Id drops a double store.
      for (;;) {
        try {
          const ack = await js.publish(`timer.commands.schedule.${TENANT}`, body, { msgID: envelope.id, timeout: PUBLISH_TIMEOUT_MS });
          commandSeq[i] = ack.seq;
          accepted[i] = 1;
          acceptedCount++;
          return;
        } catch {
          publishRetries++;
          await sleep(RETRY_MS);
        }
      }
    };

    let next = 0;
    const publisher = async (): Promise<void> => {
      while (next < options.timers) {
        const i = next++;
        const slotMs = loadStartMs + (i * 1_000) / options.rate;
        if (slotMs > Date.now()) await sleep(slotMs - Date.now());
        await publishOne(i);
      }
    };
    const load = Promise.all(Array.from({ length: Math.min(options.concurrency ?? 256, options.timers) }, publisher));

    let kills = 0;
    let brokerRestarts = 0;
    const chaosDone = (async () => {
      for (const [stepIndex, step] of chaos.entries()) {
        while (acceptedCount < step.atShare * options.timers) await sleep(10);
        await sleep(step.delayMs);
        if (step.action === "kill") {
          const running = services[victims[stepIndex]!]!;
          await running.kill("SIGKILL");
          kills++;
          await sleep(Math.floor(step.downMs / 5));
          await running.restart({ waitReady: false });
        } else {
          const before = await lastSequences(jsm);
          await nats.stop(true);
          brokerRestarts++;
          await sleep(step.downMs);
          await nats.restart();
          const after = await lastSequences(jsm, 10_000);
          log(
            `crash-loop: broker restart ${brokerRestarts}: last sequences before the kill ${JSON.stringify(before)}, after the restart ${JSON.stringify(after)}`,
          );
        }
        log(
          `crash-loop: ${step.action === "kill" ? `kill ${kills}` : `broker restart ${brokerRestarts}`} at ${acceptedCount} accepted (${((Date.now() - startedAtMs) / 1000).toFixed(1)} s)`,
        );
      }
    })();
    await Promise.all([load, chaosDone]);
    log(
      `crash-loop: load done: ${acceptedCount} accepted, ${publishRetries} publish retries (${((Date.now() - startedAtMs) / 1000).toFixed(1)} s)`,
    );

    for (const service of services) await service.waitUntilReady(60_000);
    const eventsReader = reader;
    // Accepted timers not fired yet; shrinks as events arrive.
    let missing: number[] = [];
    for (let i = 0; i < options.timers; i++) if (accepted[i] === 1) missing.push(i);
    const stallMs = options.stallMs ?? 60_000;
    let lastProgressMs = Date.now();
    for (;;) {
      const before = missing.length;
      missing = missing.filter((i) => !eventsReader.hasFired(TENANT, `t-${i}`));
      if (missing.length === 0) break;
      if (missing.length < before) lastProgressMs = Date.now();
      else if (Date.now() - lastProgressMs > stallMs) break;
      await sleep(250);
    }
    if (missing.length > 0) {
      log(
        `crash-loop: not fired: ${missing
          .slice(0, 20)
          .map((i) => `t-${i}`)
          .join(", ")}${missing.length > 20 ? ", …" : ""}`,
      );
      await explainMissing(TENANT, missing, commandSeq, services, jsm, log);
    }
    if (eventsReader.lostTail.length > 0)
      log(`crash-loop: the events stream lost its tail in a broker restart: ${JSON.stringify(eventsReader.lostTail)}`);

    const index = (serviceCallId: string): number => (serviceCallId.startsWith("t-") ? Number(serviceCallId.slice(2)) : -1);
    const lags: number[] = [];
    const firstSeen = new Set<string>();
    let early = 0;
    let unexpected = 0;
    for (const event of eventsReader.events) {
      const i = index(event.serviceCallId);
      if (event.tenantId !== TENANT || !(i >= 0 && i < options.timers) || event.dueAtMs !== dueAtMs[i]) unexpected++;
      if (event.reachedAtMs < event.dueAtMs || event.storedAtMs < event.dueAtMs) early++;
      if (!firstSeen.has(event.serviceCallId)) {
        firstSeen.add(event.serviceCallId);
        lags.push((event.storedAtMs - event.dueAtMs) / 1000);
      }
    }
    lags.sort((a, b) => a - b);
    const quantile = (q: number): number => (lags.length === 0 ? 0 : lags[Math.min(lags.length - 1, Math.floor(q * lags.length))]!);
    return {
      timers: acceptedCount,
      store,
      instances,
      kills,
      brokerRestarts,
      lost: missing.length,
      early,
      duplicates: eventsReader.duplicates,
      duplicatePublishes: duePublishes - publishedIds.size,
      durationS: Math.round((Date.now() - startedAtMs) / 100) / 10,
      seed: options.seed,
      unexpected,
      lagP50S: quantile(0.5),
      lagP99S: quantile(0.99),
      lagMaxS: lags.at(-1) ?? 0,
      eventsLostByBroker: eventsReader.lostTail.reduce((sum, loss) => sum + loss.readUpTo - loss.lastSeqAfter, 0),
    };
  } finally {
    await reader?.close();
    await producer?.close().catch(() => undefined);
    // Every instance is stopped before any of them drops the shared schema.
    for (const service of services) await service.kill("SIGKILL").catch(() => undefined);
    for (const service of services) await service.dispose();
    if (schema !== undefined) await dropSchema(schema).catch(() => undefined);
    await nats.dispose();
  }
}

function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
