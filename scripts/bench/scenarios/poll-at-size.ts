/**
 * pollAt1M / pollAt10M: the service on a store holding 1M (10M with --size 10m) Scheduled timers
 * that are not due, while a trickle of timers fires (20 per second, each scheduled 1 s ahead).
 * Reports the poll duration from the service's own histogram timer_polling_duration_seconds over
 * the trickle window only (difference of two scrapes; p99 interpolated inside its bucket, with the
 * bucket given), the RSS (process_resident_memory_bytes and /proc VmRSS/VmHWM) after the window,
 * the start-up time on that store, and the trickle's end-to-end lag.
 */
import {
  BenchClient,
  CpuMeter,
  DueEventCollector,
  callId,
  histogramDelta,
  histogramFractionBelow,
  histogramOf,
  histogramQuantile,
  memoryOf,
  metricSum,
  natsPid,
  restartService,
  round,
  scaled,
  scheduleMessage,
  scrape,
  sleep,
  startNats,
  startService,
  stopService,
  summary,
  withRowsInserted,
  type BenchContext,
} from "../harness.js";

const TENANT = "bench-poll";
const TRICKLE_PER_SEC = 20;

export function pollAtSize(pendingFull: number, name: string) {
  return async (ctx: BenchContext): Promise<Record<string, unknown>> => {
    const pending = scaled(ctx, pendingFull);
    const windowMs = ctx.quick ? 5_000 : 20_000;
    const nats = await startNats(ctx);
    const service = await startService(ctx, nats.url, name);
    const client = await BenchClient.connect(ctx, nats.url);
    const events = new DueEventCollector(ctx, client.nc, `timer.events.due.${TENANT}`, true);
    await client.nc.flush();

    const base = Date.now() + 86_400_000;
    const span = 30 * 86_400_000;
    const { populate } = await withRowsInserted(ctx, service, {
      count: pending,
      tenantId: "bench-pending",
      idPrefix: "p",
      dueAtMs: (i) => base + Math.floor((i * span) / pending),
      label: name,
    });
    const started = await restartService(service);
    ctx.log(`service ready on ${pending} pending rows after ${started.startupS.toFixed(2)} s`);
    await sleep(2_000);

    const before = await scrape(service);
    const pendingGauge = metricSum(before, "timer_schedules_pending");
    const cpu = new CpuMeter({ service: service.pid, nats: natsPid(nats) });
    const total = Math.round((TRICKLE_PER_SEC * windowMs) / 1000);
    const t0 = Date.now();
    const due = new Map<string, number>();
    const publishes: Promise<unknown>[] = [];
    for (let i = 0; i < total; i++) {
      await sleep(t0 + (i * 1000) / TRICKLE_PER_SEC - Date.now());
      const id = callId("trickle", i);
      const dueAtMs = Date.now() + 1_000;
      due.set(id, dueAtMs);
      const message = scheduleMessage(TENANT, id, dueAtMs);
      publishes.push(client.js.publish(message.subject, message.data).catch(() => undefined));
    }
    await Promise.all(publishes);
    await events.waitFor(total, 20_000, name).catch((error: unknown) => ctx.log(String(error)));
    const after = await scrape(service);
    const cpuRead = cpu.read();
    const memory = memoryOf(service.pid);
    const polls = histogramDelta(
      histogramOf(before, "timer_polling_duration_seconds"),
      histogramOf(after, "timer_polling_duration_seconds"),
    );
    const p99 = histogramQuantile(polls, 0.99);
    const p50 = histogramQuantile(polls, 0.5);
    const lags = events.bodies.flatMap(({ receivedAtMs, body }) => {
      const dueAtMs = due.get(body.payload?.serviceCallId);
      return dueAtMs === undefined ? [] : [receivedAtMs - dueAtMs];
    });
    const rssMB = round(metricSum(after, "process_resident_memory_bytes") / 1048576);
    ctx.log(
      `${polls.count} polls: p50 ${p50 === undefined ? "?" : (p50.value * 1000).toFixed(2)} ms, p99 ${p99 === undefined ? "?" : (p99.value * 1000).toFixed(2)} ms; RSS ${rssMB} MB`,
    );
    await stopService(service);
    return {
      pending,
      pendingGauge,
      populate,
      startupS: round(started.startupS, 2),
      windowS: windowMs / 1000,
      polls: polls.count,
      pollP50Ms: p50 === undefined ? undefined : round(p50.value * 1000, 2),
      pollP99Ms: p99 === undefined ? undefined : round(p99.value * 1000, 2),
      pollP99BucketMs: p99 === undefined ? undefined : [p99.bucketLow * 1000, p99.bucketHigh * 1000],
      pollMeanMs: polls.count > 0 ? round((polls.sum / polls.count) * 1000, 2) : undefined,
      pollsUnder20Ms: round(histogramFractionBelow(polls, 0.02) ?? NaN, 3),
      rssMB,
      proc: memory,
      heapUsedMB: round(metricSum(after, "nodejs_heap_size_used_bytes") / 1048576),
      trickle: { timers: total, received: lags.length, lagMs: summary(lags) },
      cpu: cpuRead,
    };
  };
}
