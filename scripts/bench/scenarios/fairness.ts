/**
 * Fair firing across tenants (CONTRACT §12, ADR-0009), on the store given with --store:
 *
 * - noisyNeighbour: tenant A schedules 100,000 timers due at one instant T, tenant B 50 timers due
 *   in the second after T (T + 300 … T + 790 ms). Reports B's lateness (event received − dueAt)
 *   p50 / p99 / max and A's drain time (last A event − T), with A alone (`aloneSeconds`, the burst
 *   scenario's workload) in the same run for the ratio.
 * - manyTenants: 10,000 tenants × 10 timers due at one instant: drain time and rate, against one
 *   tenant with the same 100,000 (the `aloneSeconds` above).
 *
 *   npm run bench -- --only noisyNeighbour,manyTenants
 */
import {
  BenchClient,
  COMMANDS_CONSUMER,
  COMMANDS_STREAM,
  DueEventCollector,
  publishAll,
  round,
  scaled,
  scheduleMessage,
  sleep,
  startNats,
  startService,
  stopService,
  summary,
  waitConsumerDrained,
  type BenchContext,
  type OutMessage,
} from "../harness.js";

const FALLBACK_INGEST_PER_SEC = 8_000;

interface Burst {
  readonly messages: OutMessage[];
}

/** The last receive time of `events` (reduce: 100,000 arguments are too many for Math.max). */
function lastReceivedMs(events: readonly { receivedAtMs: number }[]): number {
  return events.reduce((latest, e) => Math.max(latest, e.receivedAtMs), Number.NEGATIVE_INFINITY);
}

/** Ingests `burst` with every timer due at T + its offset, waits for T, collects every due event. */
async function runBurst(ctx: BenchContext, label: string, build: (dueAtMs: number) => Burst) {
  const nats = await startNats(ctx);
  const service = await startService(ctx, nats.url, label);
  const client = await BenchClient.connect(ctx, nats.url);
  const events = new DueEventCollector(ctx, client.nc, "timer.events.due.>", true);
  await client.nc.flush();
  const measured = (ctx.earlier.ingest as { empty?: { commandsPerSec?: number } } | undefined)?.empty?.commandsPerSec;
  const rate = measured !== undefined ? measured * 0.5 : FALLBACK_INGEST_PER_SEC;
  const probe = build(0);
  const marginMs = Math.ceil(3_000 + (probe.messages.length / rate) * 1000);
  const dueAtMs = Math.ceil((Date.now() + marginMs) / 1000) * 1000;
  const { messages } = build(dueAtMs);
  let published = false;
  const publishing = publishAll(client.nc, messages, { inFlight: 2_000, timeoutMs: 600_000, label: `${label} ingest` }).then(
    () => (published = true),
  );
  const [stored] = await Promise.all([
    waitConsumerDrained(client, COMMANDS_STREAM, COMMANDS_CONSUMER, {
      timeoutMs: 600_000,
      what: `${label} stored`,
      published: () => published,
    }),
    publishing,
  ]);
  const valid = dueAtMs - stored.atMs >= 500 && events.count === 0;
  await sleep(dueAtMs - Date.now());
  await events.waitFor(messages.length, 300_000, label);
  await stopService(service);
  return { dueAtMs, valid, events: events.bodies };
}

export async function noisyNeighbour(ctx: BenchContext): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 100_000);
  const quiet = 50;
  const alone = await runBurst(ctx, "noisyNeighbour-alone", (dueAtMs) => ({
    messages: Array.from({ length: n }, (_, i) => scheduleMessage("bench-a", `a-${i}`, dueAtMs)),
  }));
  const aloneSeconds = (lastReceivedMs(alone.events) - alone.dueAtMs) / 1000;
  const mixed = await runBurst(ctx, "noisyNeighbour", (dueAtMs) => ({
    messages: [
      ...Array.from({ length: n }, (_, i) => scheduleMessage("bench-a", `a-${i}`, dueAtMs)),
      ...Array.from({ length: quiet }, (_, i) => scheduleMessage("bench-b", `b-${i}`, dueAtMs + 300 + i * 10)),
    ],
  }));
  const quietLateness = mixed.events
    .filter((e) => e.body.tenantId === "bench-b")
    .map((e) => e.receivedAtMs - Date.parse(e.body.payload.dueAt as string));
  const noisySeconds = (lastReceivedMs(mixed.events.filter((e) => e.body.tenantId === "bench-a")) - mixed.dueAtMs) / 1000;
  const lateness = summary(quietLateness);
  ctx.log(
    `B lateness p50/p99/max ${lateness?.p50}/${lateness?.p99}/${lateness?.max} ms; A drains in ${noisySeconds.toFixed(2)} s (alone ${aloneSeconds.toFixed(2)} s)`,
  );
  return {
    timers: n,
    quietTimers: quiet,
    valid: alone.valid && mixed.valid,
    quietLatenessMs: lateness,
    noisySeconds: round(noisySeconds, 2),
    aloneSeconds: round(aloneSeconds, 2),
    aloneToNoisyRate: round(aloneSeconds / noisySeconds, 2),
  };
}

export async function manyTenants(ctx: BenchContext): Promise<Record<string, unknown>> {
  const tenants = scaled(ctx, 10_000);
  const perTenant = 10;
  const run = await runBurst(ctx, "manyTenants", (dueAtMs) => ({
    messages: Array.from({ length: tenants * perTenant }, (_, i) =>
      scheduleMessage(`t-${i % tenants}`, `c-${Math.floor(i / tenants)}`, dueAtMs),
    ),
  }));
  const seconds = (lastReceivedMs(run.events) - run.dueAtMs) / 1000;
  const alone = (ctx.earlier.noisyNeighbour as { aloneSeconds?: number } | undefined)?.aloneSeconds;
  ctx.log(
    `${tenants} tenants × ${perTenant}: drained in ${seconds.toFixed(2)} s${alone === undefined ? "" : ` (one tenant alone ${alone} s)`}`,
  );
  return {
    tenants,
    perTenant,
    valid: run.valid,
    seconds: round(seconds, 2),
    eventsPerSec: Math.round((tenants * perTenant) / seconds),
    ...(alone === undefined ? {} : { rateToOneTenant: round(alone / seconds, 2) }),
  };
}

/**
 * queryFlood: tenant A holds 2,000 timers with 1 KiB of data and sends 2,000 `list` queries (limit
 * 1000) over NATS, 50 in flight, while tenant B's 300 timers fall due over 6 s. Reports B's lateness
 * p50 / p99 / max against the same timers with A quiet (in the same run), and how A's queries ended
 * (answered, busy).
 */
export async function queryFlood(ctx: BenchContext): Promise<Record<string, unknown>> {
  const queries = scaled(ctx, 2_000);
  const quietTimers = 300;
  const nats = await startNats(ctx);
  const service = await startService(ctx, nats.url, "queryFlood");
  const client = await BenchClient.connect(ctx, nats.url);
  const events = new DueEventCollector(ctx, client.nc, "timer.events.due.bench-b", true);
  await client.nc.flush();
  const data = "x".repeat(1_000);
  const stock = Array.from({ length: 2_000 }, (_, i) => {
    const message = scheduleMessage("bench-a", `stock-${i}`, Date.now() + 86_400_000);
    const envelope = JSON.parse(new TextDecoder().decode(message.data)) as { payload: Record<string, unknown> };
    envelope.payload.data = { filler: data };
    return { subject: message.subject, data: new TextEncoder().encode(JSON.stringify(envelope)) };
  });
  await publishAll(client.nc, stock, { inFlight: 500, timeoutMs: 120_000, label: "queryFlood stock" });
  await waitConsumerDrained(client, COMMANDS_STREAM, COMMANDS_CONSUMER, {
    timeoutMs: 120_000,
    what: "stock stored",
    published: () => true,
  });

  /** B's timers due over 6 s from 2 s ahead; resolves with their lateness once all arrived. */
  const quietRound = async (label: string): Promise<number[]> => {
    const firstDueMs = Date.now() + 2_000;
    const before = events.count;
    const messages = Array.from({ length: quietTimers }, (_, i) => scheduleMessage("bench-b", `${label}-${i}`, firstDueMs + i * 20));
    await publishAll(client.nc, messages, { inFlight: 100, timeoutMs: 60_000, label: `queryFlood ${label}` });
    await events.waitFor(before + quietTimers, 120_000, `queryFlood ${label}`);
    return events.bodies.slice(before).map((e) => e.receivedAtMs - Date.parse(e.body.payload.dueAt as string));
  };

  const quiet = await quietRound("quiet");
  let answered = 0;
  let busy = 0;
  let next = 0;
  const flooding = (async () => {
    await sleep(1_500);
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (next++ < queries) {
          const reply = await client.nc.request("timer.query.list.bench-a", JSON.stringify({ limit: 1000 }), { timeout: 30_000 });
          if (reply.headers?.get("Nats-Service-Error-Code") === "503") busy++;
          else answered++;
        }
      }),
    );
  })();
  const flooded = await quietRound("flooded");
  await flooding;
  await stopService(service);
  const withFlood = summary(flooded);
  const without = summary(quiet);
  ctx.log(
    `B lateness p99 ${without?.p99} ms quiet, ${withFlood?.p99} ms under A's ${queries} list queries (${answered} answered, ${busy} busy)`,
  );
  return { queries, answered, busy, quietLatenessMs: without, floodedLatenessMs: withFlood };
}
