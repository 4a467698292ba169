import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerClient } from "../support/timer-client.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { EventStreamReader } from "../support/event-stream-reader.js";
import { TEST_DATABASE_URL, dropSchema, uniqueSchema } from "../support/test-postgres.js";
import { TENANT, earlyEvents, mismatchedEvents, type PlannedTimer } from "./fault-support.js";

const SPREAD = 50_000;
const BURST = 20_000;
/** Spread timers fall due over this window, which opens SPREAD_FROM_MS after the load starts. */
const SPREAD_FROM_MS = 12_000;
const SPREAD_WINDOW_MS = 30_000;
/** The burst is due at one instant, this long after the load starts (inside the spread window). */
const BURST_AT_MS = 25_000;
/** Cancelled: every 10th spread timer of the window's last quarter (due long after the cancels are sent). */
const CANCEL_EVERY = 10;
const CANCEL_FROM_SHARE = 0.75;
const CLAIM_TTL_MS = 2_000;

/**
 * CONTRACT §6: three instances share one Postgres schema, one durable consumer and both streams.
 * 50,000 timers due over 30 s and 20,000 due at one instant, a subset cancelled; one instance is
 * killed with SIGKILL mid-ingest and another mid-burst, both restarted. Nothing is lost, nothing
 * fires early, no cancelled timer fires after its cancel was applied, and every second publish
 * (a killed instance's expired claim, fired again by another) is dropped by the duplicate window:
 * the events stream holds exactly one event per fired timer. A core subscription sees every publish,
 * dropped ones included, which counts the duplicate publishes.
 */
describe("three instances on one Postgres", () => {
  const schema = uniqueSchema("instances");
  let nats: NatsServerProcess;
  let services: TimerServiceProcess[] = [];
  let client: TimerClient;
  let reader: EventStreamReader;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    const env = {
      TIMER_STORE: "postgres",
      TIMER_DATABASE_URL: TEST_DATABASE_URL,
      TIMER_DATABASE_SCHEMA: schema,
      TIMER_CLAIM_TTL_MS: String(CLAIM_TTL_MS),
      TIMER_POLLING_INTERVAL: "500",
      TIMER_BATCH_SIZE: "500",
      TIMER_LOG_LEVEL: "warn",
    };
    // Started at once: their migrations meet on the advisory lock.
    services = await Promise.all([0, 1, 2].map(() => TimerServiceProcess.start(nats.url, env, { waitReady: false })));
    await Promise.all(services.map((service) => service.waitUntilReady(60_000)));
    client = await TimerClient.connect(nats.url);
    reader = await EventStreamReader.start(nats.url);
  }, 90_000);

  afterAll(async () => {
    await reader?.close();
    await client?.close();
    // Each process would drop the shared schema; drop it once, after all of them stopped.
    for (const service of services) await service.kill("SIGKILL").catch(() => undefined);
    for (const service of services) await service.dispose();
    await dropSchema(schema).catch(() => undefined);
    await nats?.dispose();
  });

  it("when one instance is killed mid-ingest and another mid-burst and both restart, then lost 0, early 0, none fired after its cancel, and every duplicate publish is absorbed", async () => {
    const startMs = Date.now();
    const spread: PlannedTimer[] = Array.from({ length: SPREAD }, (_, i) => ({
      serviceCallId: `spread-${i}`,
      dueAtMs: startMs + SPREAD_FROM_MS + Math.floor((SPREAD_WINDOW_MS * i) / SPREAD),
    }));
    const burstAtMs = startMs + BURST_AT_MS;
    const burst: PlannedTimer[] = Array.from({ length: BURST }, (_, i) => ({ serviceCallId: `burst-${i}`, dueAtMs: burstAtMs }));
    const cancelled = spread.filter((_, i) => i >= SPREAD * CANCEL_FROM_SHARE && i % CANCEL_EVERY === 0);
    // Interleaved so that ingest carries both kinds all along.
    const load: PlannedTimer[] = [];
    for (let i = 0; i < SPREAD; i++) {
      load.push(spread[i]!);
      if (i % 5 < 2) load.push(burst[load.length - i - 1]!);
    }
    expect(load).toHaveLength(SPREAD + BURST);

    // Ingest, with instance 0 killed once a third of the commands are in the stream.
    let acked = 0;
    let ingestKillAt = -1;
    const killDuringIngest = (async () => {
      await untilTrue(() => acked >= load.length / 3, 60_000, "a third of the load acked by the stream");
      ingestKillAt = acked;
      await services[0]!.kill("SIGKILL");
      await sleep(1_000);
      await services[0]!.restart({ waitReady: false });
    })();
    let next = 0;
    await Promise.all(
      Array.from({ length: 300 }, async () => {
        while (next < load.length) {
          const timer = load[next++]!;
          await client.schedule(TENANT, timer.serviceCallId, new Date(timer.dueAtMs), { id: `s-${timer.serviceCallId}` });
          acked++;
        }
      }),
    );
    await killDuringIngest;
    const ingestedMs = Date.now() - startMs;
    // Cancels go out once every schedule is in the stream: a cancel is newer than its schedule.
    const cancelSentAtMs = new Map<string, number>();
    let cancelNext = 0;
    await Promise.all(
      Array.from({ length: 100 }, async () => {
        while (cancelNext < cancelled.length) {
          const timer = cancelled[cancelNext++]!;
          cancelSentAtMs.set(timer.serviceCallId, Date.now());
          await client.cancel(TENANT, timer.serviceCallId, { id: `c-${timer.serviceCallId}` });
        }
      }),
    );
    const cancelsSentMs = Date.now() - startMs;

    // Instance 1 is killed mid-burst: some of the burst has fired, not all.
    const burstFired = (): number => burst.filter((t) => reader.hasFired(TENANT, t.serviceCallId)).length;
    await untilTrue(() => Date.now() >= burstAtMs && burstFired() >= BURST / 10, 60_000, "a tenth of the burst fired");
    const burstFiredAtKill = burstFired();
    await services[1]!.kill("SIGKILL");
    await sleep(1_000);
    await services[1]!.restart({ waitReady: false });
    await Promise.all(services.map((service) => service.waitUntilReady(60_000)));

    const cancelledIds = new Set(cancelled.map((t) => t.serviceCallId));
    const mustFire = [...spread, ...burst].filter((t) => !cancelledIds.has(t.serviceCallId));
    await reader.waitForTimers(TENANT, mustFire.map((t) => t.serviceCallId), 90_000);
    // Late republishes of expired claims land within a claim TTL and a poll.
    await sleep(CLAIM_TTL_MS + 1_500);

    const states = await timerStates(schema);
    const dueEvents = client.received("DueTimeReached");
    const publishes = dueEvents.length;
    const distinctPublished = new Set(dueEvents.map((event) => event.msgId)).size;
    const firedCancelled = cancelled.filter((t) => reader.hasFired(TENANT, t.serviceCallId));
    const firedAfterCancelApplied = cancelled.filter((t) => states.get(t.serviceCallId) === "Cancelled" && reader.hasFired(TENANT, t.serviceCallId));
    const firedAfterCancelSent = firedCancelled.filter((t) => reader.eventsOf(TENANT, t.serviceCallId)[0]!.storedAtMs > cancelSentAtMs.get(t.serviceCallId)!);
    const stored = reader.events.length;
    console.info(
      `postgres-instances: ${load.length} timers ingested in ${ingestedMs} ms, ${cancelled.length} cancels sent by ${cancelsSentMs} ms; ` +
        `instance 0 killed at ${ingestKillAt}/${load.length} commands acked by the stream, instance 1 at ${burstFiredAtKill}/${BURST} of the burst fired; ` +
        `${publishes} DueTimeReached published for ${distinctPublished} distinct ids (${publishes - distinctPublished} duplicate publishes), ` +
        `${stored} stored in the stream, ${firedCancelled.length} cancelled timers fired before their cancel applied ` +
        `(${firedAfterCancelSent.length} of those after the cancel was sent), total ${((Date.now() - startMs) / 1000).toFixed(1)} s`,
    );

    expect(mustFire.filter((t) => !reader.hasFired(TENANT, t.serviceCallId)), "lost").toEqual([]);
    expect(earlyEvents(reader.events), "early").toEqual([]);
    expect(mismatchedEvents(reader.events, [...spread, ...burst])).toEqual([]);
    expect(firedAfterCancelApplied, "fired although its cancel was applied").toEqual([]);
    for (const timer of firedCancelled) expect(states.get(timer.serviceCallId), "a cancel that came after the fire is ignored").toBe("Reached");
    expect(reader.duplicates, "duplicates stored in the events stream").toBe(0);
    expect(stored, "distinct events = fired timers").toBe(reader.firedTimers);
    expect(reader.firedTimers).toBe(mustFire.length + firedCancelled.length);
    expect(distinctPublished, "every published id is stored once").toBe(stored);
    expect([...states.values()].filter((state) => state === "Scheduled"), "nothing left scheduled").toEqual([]);
  }, 240_000);
});

/** Timer states in the shared schema, by serviceCallId. */
async function timerStates(schema: string): Promise<Map<string, string>> {
  const db = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await db.connect();
  try {
    const { rows } = await db.query<{ id: string; state: string }>(`SELECT service_call_id AS id, state FROM "${schema}".timer_schedules WHERE tenant_id = $1`, [TENANT]);
    return new Map(rows.map((row) => [row.id, row.state]));
  } finally {
    await db.end();
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function untilTrue(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(20);
  }
}
