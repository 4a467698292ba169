/**
 * recovery: N timers overdue when the service starts. The service runs once (migrations, streams),
 * is stopped, N Scheduled rows due 60–120 s ago are written straight into its database, and the
 * service is started again. Measured until the last distinct DueTimeReached is received, from the
 * process spawn and from /readyz answering 200.
 */
import {
  BenchClient,
  CpuMeter,
  DueEventCollector,
  memoryOf,
  metricSum,
  monoUs,
  natsPid,
  restartService,
  round,
  scaled,
  scrape,
  serviceCoreBoundPerSec,
  startNats,
  startService,
  stopService,
  withRowsInserted,
  type BenchContext,
} from "../harness.js";

const TENANT = "bench-recovery";

export async function recovery(ctx: BenchContext): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 100_000);
  const nats = await startNats(ctx);
  const service = await startService(ctx, nats.url, "recovery");
  const client = await BenchClient.connect(ctx, nats.url);
  const events = new DueEventCollector(ctx, client.nc, `timer.events.due.${TENANT}`);
  await client.nc.flush();

  const now = Date.now();
  const { populate } = await withRowsInserted(ctx, service, {
    count: n,
    tenantId: TENANT,
    idPrefix: "r",
    dueAtMs: (i) => now - 120_000 + Math.floor((i * 60_000) / n),
    label: "recovery",
  });

  const fromUs = monoUs();
  const restarting = restartService(service);
  const cpu = new CpuMeter({ service: service.pid, nats: natsPid(nats) });
  const started = await restarting;
  await events.waitFor(n, 300_000, "recovery");
  const cpuRead = cpu.read(n);
  ctx.profileWindows.push({ label: "recovery", name: "recovery (spawn to last event)", fromUs, toUs: monoUs() });
  const lastAtMs = events.lastAtMs!;
  const fromStartS = (lastAtMs - started.spawnedAtMs) / 1000;
  const fromReadyS = (lastAtMs - started.readyAtMs) / 1000;
  ctx.log(
    `${n} overdue drained ${fromStartS.toFixed(2)} s after spawn, ${fromReadyS.toFixed(2)} s after ready (service busy ${cpuRead.serviceBusy ?? "?"} cores)`,
  );
  const processed = metricSum(await scrape(service), "timer_schedules_processed_total");
  const memory = memoryOf(service.pid);
  await stopService(service);
  return {
    timers: n,
    fromStartS: round(fromStartS, 2),
    fromReadyS: round(fromReadyS, 2),
    startupS: round(started.startupS, 2),
    firstEventAfterSpawnMs: events.firstAtMs! - started.spawnedAtMs,
    eventsPerSec: Math.round(n / Math.max(0.001, (lastAtMs - events.firstAtMs!) / 1000)),
    processed,
    duplicatesReceived: events.duplicates,
    populate,
    serviceMemory: memory,
    serviceCoreBoundPerSec: serviceCoreBoundPerSec(cpuRead),
    cpu: cpuRead,
  };
}
