/**
 * burst: N timers due at one instant T. They are ingested first (dueAt = T, far enough ahead to
 * store them all), then the bench waits for T and measures until the last distinct DueTimeReached
 * arrives on a core subscription to timer.events.due.{tenant}. The figure is (last receive − T).
 * If the ingest was not finished 0.5 s before T the result is flagged invalid (the service would
 * have been ingesting and firing at once).
 */
import {
  BenchClient,
  COMMANDS_CONSUMER,
  COMMANDS_STREAM,
  CpuMeter,
  DueEventCollector,
  callId,
  memoryOf,
  metricSum,
  monoUs,
  natsPid,
  publishAll,
  round,
  scaled,
  scheduleMessage,
  scrape,
  serviceCoreBoundPerSec,
  sleep,
  startNats,
  startService,
  stopService,
  waitConsumerDrained,
  waitUntil,
  type BenchContext,
} from "../harness.js";

const TENANT = "bench-burst";
/** Assumed ingest rate when the ingest scenario did not run before (conservative). */
const FALLBACK_INGEST_PER_SEC = 8_000;

export async function burst(ctx: BenchContext): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 100_000);
  const nats = await startNats(ctx);
  const service = await startService(ctx, nats.url, "burst");
  const client = await BenchClient.connect(ctx, nats.url);
  const events = new DueEventCollector(ctx, client.nc, `timer.events.due.${TENANT}`);
  await client.nc.flush();
  const pids = { service: service.pid, nats: natsPid(nats) };

  // How long the ingest will take: the measured rate (with a safety factor) or a fallback.
  const measured = (ctx.earlier.ingest as { empty?: { commandsPerSec?: number } } | undefined)?.empty?.commandsPerSec;
  const rate = measured !== undefined ? measured * 0.5 : FALLBACK_INGEST_PER_SEC;
  const marginMs = Math.ceil(3_000 + (n / rate) * 1000);
  const dueAtMs = Math.ceil((Date.now() + marginMs) / 1000) * 1000;
  ctx.log(`scheduling ${n} timers due at ${new Date(dueAtMs).toISOString()} (in ${((dueAtMs - Date.now()) / 1000).toFixed(1)} s)`);
  const messages = Array.from({ length: n }, (_, i) => scheduleMessage(TENANT, callId("b", i), dueAtMs));
  let published = false;
  const publishing = publishAll(client.nc, messages, { inFlight: 2_000, timeoutMs: 600_000, label: "burst ingest" }).then((r) => {
    published = true;
    return r;
  });
  const [stored] = await Promise.all([
    waitConsumerDrained(client, COMMANDS_STREAM, COMMANDS_CONSUMER, {
      timeoutMs: 600_000,
      what: "burst commands stored",
      published: () => published,
    }),
    publishing,
  ]);
  const pending = await waitUntil(
    async () => {
      const value = metricSum(await scrape(service), "timer_schedules_pending");
      return value >= n ? value : false;
    },
    { timeoutMs: 60_000, intervalMs: 100, what: "pending gauge to reach the burst size" },
  ).catch(() => undefined);
  const storedBeforeDueMs = dueAtMs - stored.atMs;
  const valid = storedBeforeDueMs >= 500 && events.count === 0;
  ctx.log(`all stored ${(storedBeforeDueMs / 1000).toFixed(1)} s before the due instant${valid ? "" : " — TOO LATE, result invalid"}`);

  const processedBefore = metricSum(await scrape(service), "timer_schedules_processed_total");
  await sleep(dueAtMs - Date.now() - 50);
  const cpu = new CpuMeter(pids);
  const fromUs = monoUs();
  await events.waitFor(n, 300_000, "burst");
  const cpuRead = cpu.read(n);
  ctx.profileWindows.push({ label: "burst", name: "burst firing", fromUs, toUs: monoUs() });
  const lastAtMs = events.lastAtMs!;
  const firstAtMs = events.firstAtMs!;
  const seconds = (lastAtMs - dueAtMs) / 1000;
  const after = await scrape(service);
  ctx.log(`last of ${n} events ${seconds.toFixed(2)} s after the due instant (service busy ${cpuRead.serviceBusy ?? "?"} cores)`);
  const memory = memoryOf(service.pid);
  await stopService(service);
  return {
    timers: n,
    valid,
    seconds: round(seconds, 2),
    firstEventAfterMs: firstAtMs - dueAtMs,
    eventsPerSec: Math.round(n / Math.max(0.001, (lastAtMs - firstAtMs) / 1000)),
    storedBeforeDueS: round(storedBeforeDueMs / 1000, 1),
    pendingGaugeBefore: pending?.value,
    processed: metricSum(after, "timer_schedules_processed_total") - processedBefore,
    duplicatesReceived: events.duplicates,
    serviceMemory: memory,
    serviceCoreBoundPerSec: serviceCoreBoundPerSec(cpuRead),
    cpu: cpuRead,
  };
}
