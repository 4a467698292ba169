/**
 * lowLoadLag: default configuration, 500 timers due over 10 s, each scheduled 1–2 s before it is
 * due. Per event: lag = receive time − dueAt (end to end, the subscriber is on this machine, so
 * one clock), and the service's own part reachedAt − dueAt (from the event's payload).
 */
import {
  BenchClient,
  CpuMeter,
  DueEventCollector,
  callId,
  natsPid,
  prng,
  round,
  scaled,
  scheduleMessage,
  scrape,
  histogramDelta,
  histogramOf,
  histogramQuantile,
  sleep,
  startNats,
  startService,
  stopService,
  summary,
  type BenchContext,
} from "../harness.js";

const TENANT = "bench-lag";

export async function lowLoadLag(ctx: BenchContext): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 500);
  const spreadMs = ctx.quick ? 3_000 : 10_000;
  const nats = await startNats(ctx);
  const service = await startService(ctx, nats.url, "low-load-lag");
  const client = await BenchClient.connect(ctx, nats.url);
  const events = new DueEventCollector(ctx, client.nc, `timer.events.due.${TENANT}`, true);
  await client.nc.flush();

  const random = prng(0x1a6);
  const firstDueMs = Date.now() + 2_500;
  const plan = Array.from({ length: n }, (_, i) => {
    const dueAtMs = firstDueMs + Math.floor(((i + random()) * spreadMs) / n);
    return { id: callId("lag", i), dueAtMs, publishAtMs: dueAtMs - 1_000 - Math.floor(random() * 1_000) };
  }).sort((a, b) => a.publishAtMs - b.publishAtMs);
  const lastDueMs = Math.max(...plan.map((p) => p.dueAtMs));
  ctx.log(`${n} timers due over ${spreadMs / 1000} s, each scheduled 1–2 s ahead`);

  const histBefore = histogramOf(await scrape(service), "timer_fire_lag_seconds");
  const cpu = new CpuMeter({ service: service.pid, nats: natsPid(nats) });
  const publishes: Promise<unknown>[] = [];
  let publishErrors = 0;
  for (const p of plan) {
    await sleep(p.publishAtMs - Date.now());
    const message = scheduleMessage(TENANT, p.id, p.dueAtMs);
    publishes.push(client.js.publish(message.subject, message.data).catch(() => publishErrors++));
  }
  await Promise.all(publishes);
  // Wait for all, at most until well past a full polling interval after the last due time.
  await events.waitFor(n, Math.max(1_000, lastDueMs - Date.now()) + 15_000, "lowLoadLag").catch((error: unknown) => ctx.log(String(error)));
  const cpuRead = cpu.read(n);
  const after = await scrape(service);
  await stopService(service);

  const dueById = new Map(plan.map((p) => [p.id, p.dueAtMs]));
  const endToEnd: number[] = [];
  const inService: number[] = [];
  for (const { receivedAtMs, body } of events.bodies) {
    const dueAtMs = dueById.get(body.payload?.serviceCallId);
    if (dueAtMs === undefined) continue;
    endToEnd.push(receivedAtMs - dueAtMs);
    const reachedAtMs = Date.parse(body.payload?.reachedAt);
    if (!Number.isNaN(reachedAtMs)) inService.push(reachedAtMs - dueAtMs);
  }
  const e2e = summary(endToEnd);
  const svc = summary(inService);
  ctx.log(`lag p50 ${e2e?.p50} ms, p99 ${e2e?.p99} ms, max ${e2e?.max} ms over ${endToEnd.length} events`);
  const fireLag = histogramDelta(histBefore, histogramOf(after, "timer_fire_lag_seconds"));
  const metricP99 = histogramQuantile(fireLag, 0.99);
  return {
    timers: n,
    spreadS: spreadMs / 1000,
    received: endToEnd.length,
    missing: n - endToEnd.length,
    publishErrors,
    p50Ms: e2e?.p50,
    p99Ms: e2e?.p99,
    maxMs: e2e?.max,
    endToEndMs: e2e,
    /** reachedAt − dueAt: the service's wake-up precision alone. */
    serviceReachedMs: svc,
    /** The same from the service's timer_fire_lag_seconds histogram (bucket-interpolated). */
    fireLagMetricP99Ms: metricP99 === undefined ? undefined : round(metricP99.value * 1000),
    cpu: cpuRead,
  };
}
