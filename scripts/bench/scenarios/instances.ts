/**
 * instances: what an extra instance costs and how close Postgres comes to SQLite. For
 * each deployment — 1, 2 and 3 instances on one Postgres schema and one instance on SQLite, or only
 * the one given with `--store` / `--instances` — on its own nats-server and fresh store:
 *  - ingest: N ScheduleTimer commands (due weeks ahead) published with 2000 in flight; commands/s
 *    from the first publish until the shared durable consumer has nothing pending or unacked;
 *  - burst: N timers due at one instant T, stored before T; seconds from T until the last distinct
 *    DueTimeReached arrives (core subscription, duplicates by Nats-Msg-Id not counted);
 *  - lag: 500 timers due over 10 s, each scheduled 1–2 s ahead; receive time − dueAt, p50/p99.
 * All instances and nats-server share this machine's cores with the bench and Postgres, so more
 * instances cannot add CPU here: the figures show the cost of coordination, not a speed-up.
 */
import { readFileSync, readdirSync } from "node:fs";
import {
  BenchClient,
  CpuMeter,
  COMMANDS_CONSUMER,
  COMMANDS_STREAM,
  DueEventCollector,
  Scope,
  callId,
  cpuSecondsOf,
  loadAverage,
  natsPid,
  prng,
  publishAll,
  round,
  scaled,
  scheduleMessage,
  sleep,
  startNats,
  startServices,
  summary,
  waitConsumerDrained,
  type BenchContext,
  type StoreKind,
} from "../harness.js";

const IN_FLIGHT = 2_000;
const INGEST_DUE_AHEAD_MS = 7 * 86_400_000;
/** The burst's due instant leaves this much room after the ingest it expects (at half the measured rate). */
const BURST_MARGIN_MS = 3_000;

interface Deployment {
  readonly store: StoreKind;
  readonly instances: number;
}

const MATRIX: readonly Deployment[] = [
  { store: "postgres", instances: 1 },
  { store: "postgres", instances: 2 },
  { store: "postgres", instances: 3 },
  { store: "sqlite", instances: 1 },
];

export async function instances(ctx: BenchContext): Promise<Record<string, unknown>> {
  const deployments = ctx.storeGiven || ctx.instances !== undefined ? [{ store: ctx.store, instances: ctx.instances ?? 1 }] : MATRIX;
  const results: Record<string, unknown> = {};
  for (const deployment of deployments) {
    const name = `${deployment.store}x${deployment.instances}`;
    ctx.log(`── ${name} ──`);
    const ingest = await inDeployment(ctx, deployment, "ingest", (running) => measureIngest(ctx, running));
    const burst = await inDeployment(ctx, deployment, "burst", (running) => measureBurst(ctx, running, ingest.commandsPerSec as number));
    const lag = await inDeployment(ctx, deployment, "lag", (running) => measureLag(ctx, running));
    results[name] = { ...deployment, ingest, burst, lag, loadAverageAfter: loadAverage() };
  }
  return { ...results, comparison: compare(results) };
}

interface Running {
  readonly client: BenchClient;
  /** The services' pids (service0, service1, …) and nats-server's, for CPU per item. */
  readonly pids: Readonly<Record<string, number | undefined>>;
}

/** A fresh nats-server and the deployment's services for one measurement, torn down after it. */
async function inDeployment<T>(
  ctx: BenchContext,
  deployment: Deployment,
  phase: string,
  body: (running: Running) => Promise<T>,
): Promise<T> {
  const scope = new Scope(`${ctx.scope.name}/${deployment.store}x${deployment.instances}/${phase}`);
  const sub: BenchContext = { ...ctx, scope };
  try {
    const nats = await startNats(sub);
    const services = await startServices(
      sub,
      nats.url,
      `${deployment.store}x${deployment.instances}-${phase}`,
      deployment.store,
      deployment.instances,
      { TIMER_LOG_LEVEL: "warn" },
    );
    const client = await BenchClient.connect(sub, nats.url);
    const pids = { ...Object.fromEntries(services.map((service, i) => [`service${i}`, service.pid])), nats: natsPid(nats) };
    return await body({ client, pids });
  } finally {
    await scope.close();
  }
}

async function measureIngest(ctx: BenchContext, { client, pids }: Running): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 100_000);
  const random = prng(0x9);
  const base = Date.now() + INGEST_DUE_AHEAD_MS;
  const messages = Array.from({ length: n }, (_, i) =>
    scheduleMessage("bench-ingest", callId("i", i), base + Math.floor(random() * 86_400_000)),
  );
  const cpu = new Cost(pids);
  let published = false;
  const publishing = publishAll(client.nc, messages, { inFlight: IN_FLIGHT, timeoutMs: 600_000, label: "ingest" }).then(
    (r) => ((published = true), r),
  );
  const [drained, sent] = await Promise.all([
    waitConsumerDrained(client, COMMANDS_STREAM, COMMANDS_CONSUMER, {
      timeoutMs: 600_000,
      what: "ingest stored",
      published: () => published,
    }),
    publishing,
  ]);
  const seconds = (drained.perfMs - sent.firstPerfMs) / 1000;
  ctx.log(`ingest: ${n} commands in ${seconds.toFixed(2)} s`);
  return { commands: n, seconds: round(seconds, 2), commandsPerSec: Math.round(n / seconds), cpu: cpu.read(n) };
}

async function measureBurst(
  ctx: BenchContext,
  { client, pids }: Running,
  ingestPerSec: number | undefined,
): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 100_000);
  const tenant = "bench-burst";
  const events = new DueEventCollector(ctx, client.nc, `timer.events.due.${tenant}`);
  await client.nc.flush();
  const rate = (ingestPerSec ?? 4_000) * 0.5;
  const dueAtMs = Math.ceil((Date.now() + BURST_MARGIN_MS + (n / rate) * 1000) / 1000) * 1000;
  const messages = Array.from({ length: n }, (_, i) => scheduleMessage(tenant, callId("b", i), dueAtMs));
  let published = false;
  const publishing = publishAll(client.nc, messages, { inFlight: IN_FLIGHT, timeoutMs: 600_000, label: "burst ingest" }).then(
    (r) => ((published = true), r),
  );
  const [stored] = await Promise.all([
    waitConsumerDrained(client, COMMANDS_STREAM, COMMANDS_CONSUMER, {
      timeoutMs: 600_000,
      what: "burst stored",
      published: () => published,
    }),
    publishing,
  ]);
  const storedBeforeDueMs = dueAtMs - stored.atMs;
  const valid = storedBeforeDueMs >= 500 && events.count === 0;
  await sleep(dueAtMs - Date.now() - 50);
  const cpu = new Cost(pids);
  await events.waitFor(n, 300_000, "burst");
  const cost = cpu.read(n);
  const seconds = (events.lastAtMs! - dueAtMs) / 1000;
  ctx.log(
    `burst: last of ${n} events ${seconds.toFixed(2)} s after the due instant${valid ? "" : " (ingest not finished 0.5 s before: invalid)"}`,
  );
  return {
    timers: n,
    valid,
    seconds: round(seconds, 2),
    eventsPerSec: Math.round(n / Math.max(0.001, (events.lastAtMs! - events.firstAtMs!) / 1000)),
    storedBeforeDueS: round(storedBeforeDueMs / 1000, 1),
    /** Published twice under one id (a claim taken over): dropped by the stream, counted here. */
    duplicatesReceived: events.duplicates,
    cpu: cost,
  };
}

async function measureLag(ctx: BenchContext, { client }: Running): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 500);
  const spreadMs = ctx.quick ? 3_000 : 10_000;
  const tenant = "bench-lag";
  const events = new DueEventCollector(ctx, client.nc, `timer.events.due.${tenant}`, true);
  await client.nc.flush();
  const random = prng(0x1a6);
  const firstDueMs = Date.now() + 2_500;
  const plan = Array.from({ length: n }, (_, i) => {
    const dueAtMs = firstDueMs + Math.floor(((i + random()) * spreadMs) / n);
    return { id: callId("lag", i), dueAtMs, publishAtMs: dueAtMs - 1_000 - Math.floor(random() * 1_000) };
  }).sort((a, b) => a.publishAtMs - b.publishAtMs);
  const publishes: Promise<unknown>[] = [];
  let publishErrors = 0;
  for (const p of plan) {
    await sleep(p.publishAtMs - Date.now());
    const message = scheduleMessage(tenant, p.id, p.dueAtMs);
    publishes.push(client.js.publish(message.subject, message.data).catch(() => publishErrors++));
  }
  await Promise.all(publishes);
  const lastDueMs = Math.max(...plan.map((p) => p.dueAtMs));
  await events.waitFor(n, Math.max(1_000, lastDueMs - Date.now()) + 15_000, "lag").catch((error: unknown) => ctx.log(String(error)));
  const due = new Map(plan.map((p) => [p.id, p.dueAtMs]));
  const lags = events.bodies.flatMap(({ receivedAtMs, body }) => {
    const dueAtMs = due.get(body.payload?.serviceCallId);
    return dueAtMs === undefined ? [] : [receivedAtMs - dueAtMs];
  });
  const stats = summary(lags);
  ctx.log(`lag: p50 ${stats?.p50} ms, p99 ${stats?.p99} ms over ${lags.length} events`);
  return { timers: n, received: lags.length, publishErrors, p50Ms: stats?.p50, p99Ms: stats?.p99, maxMs: stats?.max };
}

/**
 * The ratios the issue asks about: each Postgres deployment against one Postgres instance (an
 * extra instance should cost at most 10 %), and one Postgres instance against SQLite (aim ≥ 50 %
 * of its ingest and burst rates).
 */
function compare(results: Record<string, unknown>): Record<string, unknown> {
  const figure = (name: string, path: (r: any) => unknown): number | undefined => {
    const value = path(results[name]);
    return typeof value === "number" && value > 0 ? value : undefined;
  };
  const ratio = (a: number | undefined, b: number | undefined): number | undefined =>
    a === undefined || b === undefined ? undefined : round(a / b, 2);
  const ingest = (name: string) => figure(name, (r) => r?.ingest?.commandsPerSec);
  // Burst as a rate (timers per second of the whole burst), so that higher is better like ingest.
  const burstRate = (name: string) => {
    const seconds = figure(name, (r) => r?.burst?.seconds);
    const timers = figure(name, (r) => r?.burst?.timers);
    return seconds === undefined || timers === undefined ? undefined : timers / seconds;
  };
  return {
    ingestVsOnePostgres: { x2: ratio(ingest("postgresx2"), ingest("postgresx1")), x3: ratio(ingest("postgresx3"), ingest("postgresx1")) },
    burstRateVsOnePostgres: {
      x2: ratio(burstRate("postgresx2"), burstRate("postgresx1")),
      x3: ratio(burstRate("postgresx3"), burstRate("postgresx1")),
    },
    onePostgresVsSqlite: {
      ingest: ratio(ingest("postgresx1"), ingest("sqlitex1")),
      burstRate: ratio(burstRate("postgresx1"), burstRate("sqlitex1")),
    },
  };
}

/**
 * CPU per item of the measured window: every service instance summed (`servicesUsPerItem`),
 * nats-server, the bench, and the `postgres` processes alive through the window (`postgresUsPerItem`:
 * the database's own cost per item, meaningful only when nothing else uses that Postgres).
 */
class Cost {
  private readonly meter: CpuMeter;
  private readonly postgresBefore = postgresCpuSeconds();

  constructor(private readonly pids: Readonly<Record<string, number | undefined>>) {
    this.meter = new CpuMeter(pids);
  }

  read(items: number): Record<string, number> {
    const figures = this.meter.read(items);
    const services = Object.keys(this.pids).filter((name) => name.startsWith("service"));
    const servicesUs = services.reduce((sum, name) => sum + (figures[`${name}UsPerItem`] ?? 0), 0);
    const postgresNow = postgresCpuSeconds();
    // Per process, over the processes alive at both readings (other sessions' backends come and go).
    let postgresS = 0;
    for (const [pid, before] of this.postgresBefore) postgresS += Math.max(0, (postgresNow.get(pid) ?? before) - before);
    return {
      wallS: figures.wallS!,
      servicesUsPerItem: round(servicesUs, 1),
      ...(figures.natsUsPerItem === undefined ? {} : { natsUsPerItem: figures.natsUsPerItem }),
      ...(figures.benchUsPerItem === undefined ? {} : { benchUsPerItem: figures.benchUsPerItem }),
      postgresUsPerItem: round((postgresS * 1e6) / items, 1),
    };
  }
}

/** CPU seconds of each process named `postgres` (server and backends) now, by pid. */
function postgresCpuSeconds(): Map<number, number> {
  const seconds = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, "utf8").trim() !== "postgres") continue;
      const cpu = cpuSecondsOf(Number(entry));
      if (cpu !== undefined) seconds.set(Number(entry), cpu);
    } catch {
      // the process ended meanwhile
    }
  }
  return seconds;
}
