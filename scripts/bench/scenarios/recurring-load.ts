/**
 * recurringLoad: 100,000 recurring timers every 10 s — 10,000 occurrences per second,
 * evenly spread — held for 60 s. Per occurrence: lag = receive time − dueAt (end to end, one clock)
 * and the service's own part reachedAt − dueAt; coalesced events (missedOccurrences) mean the
 * service fell behind by a whole interval. Then one CancelTimersByPrefix cancels them all, and the
 * time until the pending gauge is 0 is the background sweep's rate.
 *
 *   npm run bench -- --only recurringLoad            (≈ 2 minutes)
 *   npm run bench -- --quick --only recurringLoad    (10,000 timers, 20 s: a sanity run)
 */
import type { Msg } from "@nats-io/transport-node";
import {
  BenchClient,
  COMMANDS_CONSUMER,
  COMMANDS_STREAM,
  CpuMeter,
  callId,
  natsPid,
  publishAll,
  round,
  scaled,
  scrape,
  metricSum,
  sleep,
  startNats,
  startService,
  stopService,
  summary,
  waitConsumerDrained,
  waitUntil,
  type BenchContext,
  type OutMessage,
} from "../harness.js";

const TENANT = "bench-rec";
const EVERY_MS = 10_000;
const encoder = new TextEncoder();

function recurringMessage(serviceCallId: string, dueAtMs: number, timestampMs: number): OutMessage {
  const envelope = {
    id: `${serviceCallId}@${timestampMs}`,
    type: "ScheduleTimer",
    tenantId: TENANT,
    timestampMs,
    payload: { tenantId: TENANT, serviceCallId, dueAt: new Date(dueAtMs).toISOString(), repeat: { everyMs: EVERY_MS } },
  };
  return { subject: `timer.commands.schedule.${TENANT}`, data: encoder.encode(JSON.stringify(envelope)) };
}

export async function recurringLoad(ctx: BenchContext): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 100_000);
  const holdMs = ctx.quick ? 20_000 : 60_000;
  const nats = await startNats(ctx);
  const service = await startService(ctx, nats.url, "recurring-load");
  const client = await BenchClient.connect(ctx, nats.url);

  // Lags only, no bodies kept: 600,000 events would not fit comfortably otherwise.
  let windowStartMs = Number.POSITIVE_INFINITY;
  let windowEndMs = Number.POSITIVE_INFINITY;
  const endToEnd: number[] = [];
  const inService: number[] = [];
  let coalesced = 0;
  let events = 0;
  const subscription = client.nc.subscribe(`timer.events.due.${TENANT}`, {
    callback: (error: Error | null, message: Msg) => {
      if (error !== null) return;
      const receivedAtMs = Date.now();
      events++;
      const payload = message.json<{ payload: { dueAt: string; reachedAt: string; missedOccurrences?: number } }>().payload;
      const dueAtMs = Date.parse(payload.dueAt);
      if (dueAtMs < windowStartMs || dueAtMs >= windowEndMs) return;
      endToEnd.push(receivedAtMs - dueAtMs);
      inService.push(Date.parse(payload.reachedAt) - dueAtMs);
      if (payload.missedOccurrences !== undefined) coalesced += payload.missedOccurrences;
    },
  });
  ctx.scope.defer(() => subscription.unsubscribe());
  await client.nc.flush();

  // Occurrence 1 of timer i at base + i·(10 s / n): 10,000 per second from base on, for ever.
  const ingestBudgetMs = Math.max(10_000, Math.ceil(n / 5_000) * 1_000);
  const baseMs = Date.now() + ingestBudgetMs;
  const timestampMs = Date.now();
  const messages = Array.from({ length: n }, (_, i) =>
    recurringMessage(callId("rec", i), baseMs + Math.floor((i * EVERY_MS) / n), timestampMs),
  );
  ctx.log(
    `${n} recurring timers every ${EVERY_MS / 1000} s (${Math.round((n * 1000) / EVERY_MS)} occurrences/s) from ${new Date(baseMs).toISOString()}`,
  );
  await publishAll(client.nc, messages, { inFlight: 2_000, timeoutMs: ingestBudgetMs + 60_000, label: "recurringLoad ingest" });
  const drained = await waitConsumerDrained(client, COMMANDS_STREAM, COMMANDS_CONSUMER, {
    timeoutMs: 120_000,
    what: "recurring commands stored",
  });
  const valid = drained.atMs < baseMs;
  ctx.log(
    `stored ${n} timers ${valid ? `${Math.round(baseMs - drained.atMs)} ms before the first occurrence` : "AFTER the first occurrence (invalid run)"}`,
  );

  // Measure one interval after the start (the first round catches up the ingest), for holdMs.
  windowStartMs = baseMs + EVERY_MS;
  windowEndMs = windowStartMs + holdMs;
  await sleep(windowStartMs - Date.now());
  const cpu = new CpuMeter({ service: service.pid, nats: natsPid(nats) });
  await sleep(windowEndMs + 2_000 - Date.now());
  const expected = Math.round((n * holdMs) / EVERY_MS);
  const cpuRead = cpu.read(expected);

  // One prefix cancel for all of them: the background sweep's rate.
  const cancelAt = performance.now();
  const cancel = {
    id: `cancel@${Date.now()}`,
    type: "CancelTimersByPrefix",
    tenantId: TENANT,
    timestampMs: Date.now(),
    payload: { tenantId: TENANT, serviceCallIdPrefix: "rec-" },
  };
  await client.js.publish(`timer.commands.cancelprefix.${TENANT}`, JSON.stringify(cancel));
  await waitUntil(async () => metricSum(await scrape(service), "timer_schedules_pending") === 0, {
    timeoutMs: 300_000,
    intervalMs: 250,
    what: "every recurring timer cancelled",
  });
  const sweepS = (performance.now() - cancelAt) / 1000;
  await stopService(service);

  const e2e = summary(endToEnd);
  const svc = summary(inService);
  ctx.log(
    `${endToEnd.length}/${expected} occurrences in the window: lag p50 ${e2e?.p50} ms, p99 ${e2e?.p99} ms, max ${e2e?.max} ms; coalesced ${coalesced}; sweep of ${n} in ${round(sweepS)} s`,
  );
  return {
    timers: n,
    everyMs: EVERY_MS,
    occurrencesPerSec: Math.round((n * 1000) / EVERY_MS),
    holdS: holdMs / 1000,
    valid,
    expected,
    received: endToEnd.length,
    eventsTotal: events,
    /** Occurrences replaced by a later one (the service fell a whole interval behind). */
    coalesced,
    p50Ms: e2e?.p50,
    p99Ms: e2e?.p99,
    maxMs: e2e?.max,
    endToEndMs: e2e,
    serviceReachedMs: svc,
    prefixCancelSweepS: round(sweepS, 1),
    prefixCancelPerSec: Math.round(n / sweepS),
    cpu: cpuRead,
  };
}
