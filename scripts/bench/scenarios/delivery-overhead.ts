/**
 * deliveryOverhead: the cost of completion tracking (CONTRACT §11) per timer. The same
 * n timers are ingested and fired twice on one service, once plain and once with `delivery`
 * (another tenant), then the tracked ones are confirmed with `TimerCompleted`; an unmeasured
 * warm-up round runs first. Figures: service CPU
 * µs per command while ingesting, per event while firing (due all at once: a burst), and per report.
 *
 *   npm run bench -- --only deliveryOverhead            (50,000 timers per variant)
 *   npm run bench -- --quick --only deliveryOverhead    (5,000: a sanity run)
 */
import {
  BenchClient,
  COMMANDS_CONSUMER,
  COMMANDS_STREAM,
  CpuMeter,
  DueEventCollector,
  callId,
  publishAll,
  round,
  scaled,
  startNats,
  startService,
  stopService,
  waitConsumerDrained,
  type BenchContext,
  type OutMessage,
  measureIngestThenFire,
} from "../harness.js";

const encoder = new TextEncoder();
const DELIVERY = { maxRetries: 1, backoffMs: 5_000, completionTimeoutMs: 600_000 };

function command(kind: string, type: string, tenantId: string, payload: Record<string, unknown>, i: number): OutMessage {
  const envelope = { id: `${type}-${tenantId}-${i}`, type, tenantId, timestampMs: Date.now(), payload: { tenantId, ...payload } };
  return { subject: `timer.commands.${kind}.${tenantId}`, data: encoder.encode(JSON.stringify(envelope)) };
}

export async function deliveryOverhead(ctx: BenchContext): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 50_000);
  const nats = await startNats(ctx);
  const service = await startService(ctx, nats.url, "delivery-overhead");
  const client = await BenchClient.connect(ctx, nats.url);
  const pids = { service: service.pid };
  const budgetMs = Math.max(15_000, Math.ceil(n / 2_000) * 1_000);

  const variant = async (tenantId: string, tracked: boolean) => {
    const events = new DueEventCollector(ctx, client.nc, `timer.events.due.${tenantId}`);
    const dueAtMs = Date.now() + budgetMs;
    const schedules = Array.from({ length: n }, (_, i) =>
      command(
        "schedule",
        "ScheduleTimer",
        tenantId,
        { serviceCallId: callId("d", i), dueAt: new Date(dueAtMs).toISOString(), ...(tracked ? { delivery: DELIVERY } : {}) },
        i,
      ),
    );
    const { valid, ingest, fire } = await measureIngestThenFire(client, events, pids, { schedules, dueAtMs, budgetMs, label: tenantId });
    let report: Record<string, number> | undefined;
    if (tracked) {
      const reports = Array.from({ length: n }, (_, i) =>
        command("complete", "TimerCompleted", tenantId, { serviceCallId: callId("d", i), result: "ok" }, i),
      );
      const reportCpu = new CpuMeter(pids);
      await publishAll(client.nc, reports, { inFlight: 2_000, timeoutMs: 120_000, label: `${tenantId} reports` });
      await waitConsumerDrained(client, COMMANDS_STREAM, COMMANDS_CONSUMER, { timeoutMs: 120_000, what: `${tenantId} reports stored` });
      report = reportCpu.read(n);
    }
    ctx.log(
      `${tenantId}: ingest ${ingest.serviceUsPerItem} µs/command, fire ${fire.serviceUsPerItem} µs/event${report === undefined ? "" : `, report ${report.serviceUsPerItem} µs/report`}${valid ? "" : " (ingest ran past the due time: invalid)"}`,
    );
    return { valid, ingest, fire, ...(report === undefined ? {} : { report }) };
  };

  // A first round warms the JIT and the page cache, so that neither measured variant pays for it.
  await variant("bench-warmup", true);
  const plain = await variant("bench-plain", false);
  const tracked = await variant("bench-tracked", true);
  await stopService(service);
  const us = (r: Record<string, unknown>, phase: string) => (r[phase] as Record<string, number> | undefined)?.serviceUsPerItem;
  const diff = (phase: string) => {
    const a = us(plain, phase);
    const b = us(tracked, phase);
    return a === undefined || b === undefined ? undefined : round(b - a, 1);
  };
  return {
    timers: n,
    delivery: DELIVERY,
    plain,
    tracked,
    /** Service CPU µs per timer that tracking adds, ingest and fire; plus the report, which only tracked timers have. */
    overheadUs: { ingest: diff("ingest"), fire: diff("fire"), report: us(tracked, "report") },
  };
}
