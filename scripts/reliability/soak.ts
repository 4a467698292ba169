import { parseArgs } from "node:util";
import { NatsServerProcess } from "../../test/support/nats-server.js";
import { TimerServiceProcess } from "../../test/support/timer-service-process.js";
import { TimerClient } from "../../test/support/timer-client.js";

/**
 * The soak: `npm run soak -- [--minutes 30] [--rate 200]`. Runs its own nats-server and the service
 * (default configuration) and schedules `rate` timers a second, each due 1–10 s ahead, for the
 * given time. Every 30 s it samples the service's RSS, heap, event-loop delay p99 and fire lag.
 * Prints one JSON line with the samples and the verdict: RSS and event-loop delay flat (the RSS and
 * heap slopes over the last half of the run), every timer fired once, none early. Exits 1 when a
 * timer was lost or early. The service inherits this process's environment (e.g.
 * TIMER_DB_SYNCHRONOUS). The 95-minute run and its curve: docs/reliability.md.
 */
const { values } = parseArgs({ options: { minutes: { type: "string", default: "30" }, rate: { type: "string", default: "200" } } });
const minutes = Number(values.minutes);
const rate = Number(values.rate);
if (!(minutes > 0 && minutes <= 24 * 60) || !(Number.isInteger(rate) && rate > 0 && rate <= 20_000)) {
  process.stderr.write("soak: --minutes must be in (0, 1440] and --rate an integer in 1..20000\n");
  process.exit(2);
}

const SAMPLE_EVERY_MS = 30_000;
const TENANT = "soak";

interface Sample {
  readonly atS: number;
  readonly scheduled: number;
  readonly fired: number;
  readonly rssMB: number;
  readonly heapUsedMB: number;
  readonly eventLoopP99Ms: number;
  readonly fireLagP99Ms: number;
}

const nats = await NatsServerProcess.start();
const service = await TimerServiceProcess.start(nats.url, { TIMER_LOG_LEVEL: "warn" });
const client = await TimerClient.connect(nats.url);
const dueAt = new Map<string, number>();
let fired = 0;
let early = 0;
let duplicates = 0;
let lateOver100Ms = 0;
const seen = new Set<string>();
const lags: number[] = [];

const subscription = client.connection.subscribe(`timer.events.due.${TENANT}`, {
  callback: (_error, message) => {
    const event = message.json<{ id: string; payload: { serviceCallId: string } }>();
    const receivedAtMs = Date.now();
    if (seen.has(event.id)) return void duplicates++;
    seen.add(event.id);
    fired++;
    const due = dueAt.get(event.payload.serviceCallId);
    if (due === undefined) return;
    if (receivedAtMs < due) early++;
    lags.push(receivedAtMs - due);
    if (receivedAtMs - due > 100) lateOver100Ms++;
    dueAt.delete(event.payload.serviceCallId);
  },
});

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const startedAt = Date.now();
const endAt = startedAt + minutes * 60_000;
const samples: Sample[] = [];
let scheduled = 0;
let nextSampleAt = startedAt + SAMPLE_EVERY_MS;

/** One scrape: prom-client resets its event-loop delay histogram at every scrape. */
async function scrape(): Promise<Map<string, number>> {
  const text = await (await fetch(`${service.baseUrl}/metrics`)).text();
  const values = new Map<string, number>();
  for (const line of text.split("\n")) {
    const [name, value] = line.split(" ");
    if (name !== undefined && value !== undefined && !name.startsWith("#")) values.set(name, Number(value));
  }
  return values;
}

const sample = async (): Promise<void> => {
  const metrics = await scrape();
  const rss = metrics.get("process_resident_memory_bytes") ?? 0;
  const heap = metrics.get("nodejs_heap_size_used_bytes") ?? 0;
  const loopP99 = metrics.get("nodejs_eventloop_lag_p99_seconds") ?? 0;
  samples.push({
    atS: Math.round((Date.now() - startedAt) / 1000),
    scheduled,
    fired,
    rssMB: Math.round((rss / 1e6) * 10) / 10,
    heapUsedMB: Math.round((heap / 1e6) * 10) / 10,
    eventLoopP99Ms: Math.round(loopP99 * 1e4) / 10,
    fireLagP99Ms: percentile(lags.splice(0), 99),
  });
  process.stderr.write(`soak: ${JSON.stringify(samples.at(-1))}\n`);
};

// A steady rate: each 100 ms tick publishes rate/10 commands.
const perTick = Math.max(1, Math.round(rate / 10));
while (Date.now() < endAt) {
  const tickStart = Date.now();
  const publishes: Promise<unknown>[] = [];
  for (let i = 0; i < perTick; i++) {
    const id = `s-${scheduled++}`;
    const due = Date.now() + 1_000 + Math.floor(Math.random() * 9_000);
    dueAt.set(id, due);
    publishes.push(client.schedule(TENANT, id, new Date(due)));
  }
  await Promise.all(publishes);
  if (Date.now() >= nextSampleAt) {
    await sample();
    nextSampleAt += SAMPLE_EVERY_MS;
  }
  await new Promise((r) => setTimeout(r, Math.max(0, 100 - (Date.now() - tickStart))));
}

// Let the last timers fire (all are due within 10 s).
const drainDeadline = Date.now() + 30_000;
while (dueAt.size > 0 && Date.now() < drainDeadline) await new Promise((r) => setTimeout(r, 200));
await sample();

/** Least-squares slope of `value` over the samples, per minute: ~0 on a plateau. */
function slopePerMinute(points: readonly Sample[], value: (s: Sample) => number): number {
  if (points.length < 2) return 0;
  const xs = points.map((p) => p.atS / 60);
  const ys = points.map(value);
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  const num = xs.reduce((sum, x, i) => sum + (x - mx) * (ys[i]! - my), 0);
  const den = xs.reduce((sum, x) => sum + (x - mx) ** 2, 0);
  return den === 0 ? 0 : Math.round((num / den) * 1000) / 1000;
}

const first = samples[0]!;
const last = samples.at(-1)!;
const steady = samples.slice(Math.floor(samples.length / 3));
const report = {
  soak: "timer-service",
  minutes,
  rate,
  scheduled,
  fired,
  lost: dueAt.size,
  early,
  duplicates,
  rssMB: {
    first: first.rssMB,
    last: last.rssMB,
    max: Math.max(...samples.map((s) => s.rssMB)),
    steadyMin: Math.min(...steady.map((s) => s.rssMB)),
    steadyMax: Math.max(...steady.map((s) => s.rssMB)),
  },
  // Growth per minute over the last half of the run: a plateau shows as ~0, a leak as a steady rise.
  lastHalfSlopeMBPerMin: {
    rss: slopePerMinute(samples.slice(Math.floor(samples.length / 2)), (s) => s.rssMB),
    heapUsed: slopePerMinute(samples.slice(Math.floor(samples.length / 2)), (s) => s.heapUsedMB),
  },
  eventLoopP99Ms: { first: first.eventLoopP99Ms, last: last.eventLoopP99Ms, max: Math.max(...samples.map((s) => s.eventLoopP99Ms)) },
  fireLagP99Ms: { max: Math.max(...samples.map((s) => s.fireLagP99Ms)) },
  lateOver100Ms,
  serviceWarnings: service
    .logs()
    .filter((line) => line.level === "warn" || line.level === "error")
    .map((line) => line.msg)
    .slice(0, 20),
  samples,
};
process.stdout.write(`${JSON.stringify(report)}\n`);
subscription.unsubscribe();
await client.close();
await service.dispose();
await nats.dispose();
process.exit(report.lost === 0 && report.early === 0 ? 0 : 1);
