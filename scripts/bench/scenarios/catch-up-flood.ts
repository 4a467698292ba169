/**
 * catchUpFlood: one tenant's costly catch-ups against another tenant's timers (CONTRACT §10, §12),
 * on the store given with --store. Tenant A sends N weekly crons in a zone with DST (`30 2 * * 0`,
 * America/Santiago) due since year 1 — each a catch-up of over 1,000 occurrences — while tenant B
 * has 50 timers falling due over the next 5 s. Reports B's lateness (event received − dueAt), the
 * slowest `/healthz` answer (asked every 20 ms) and how long A's catch-ups took, for N = 100 and
 * 1,000. Targets: B ≤ 1 s late, `/healthz` ≤ 200 ms.
 *
 *   npm run bench -- --only catchUpFlood [--store postgres]
 */
import {
  BenchClient,
  DueEventCollector,
  publishAll,
  round,
  scheduleMessage,
  startNats,
  startService,
  stopService,
  summary,
  type BenchContext,
  type OutMessage,
} from "../harness.js";

const QUIET = 50;
const encoder = new TextEncoder();

function costlyCron(serviceCallId: string): OutMessage {
  const timestampMs = Date.now();
  const envelope = {
    id: `${serviceCallId}@${timestampMs}`,
    type: "ScheduleTimer",
    tenantId: "bench-a",
    timestampMs,
    payload: {
      tenantId: "bench-a",
      serviceCallId,
      dueAt: "0001-01-01T00:00:00Z",
      repeat: { cron: "30 2 * * 0", timezone: "America/Santiago" },
    },
  };
  return { subject: "timer.commands.schedule.bench-a", data: encoder.encode(JSON.stringify(envelope)) };
}

/** Asks /healthz every 20 ms until stopped; the answer times in ms. */
function probeHealth(baseUrl: string): () => Promise<number[]> {
  let running = true;
  const times: number[] = [];
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      try {
        await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(5_000) });
      } catch {
        // counted by its time
      }
      times.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return async () => {
    running = false;
    await loop;
    return times;
  };
}

async function flood(ctx: BenchContext, costly: number): Promise<Record<string, unknown>> {
  const nats = await startNats(ctx);
  const service = await startService(ctx, nats.url, `catchUpFlood-${costly}`);
  const client = await BenchClient.connect(ctx, nats.url);
  const events = new DueEventCollector(ctx, client.nc, "timer.events.due.>", true);
  await client.nc.flush();
  const stopProbe = probeHealth(service.baseUrl);
  // B's timers are stored first, due from 1 s on; A's catch-ups then arrive and fall due at once.
  const firstQuietDueMs = Date.now() + 1_000;
  await publishAll(
    client.nc,
    Array.from({ length: QUIET }, (_, i) => scheduleMessage("bench-b", `b-${i}`, firstQuietDueMs + i * 100)),
    { inFlight: QUIET, timeoutMs: 60_000, label: "catchUpFlood quiet tenant" },
  );
  const sentAtMs = Date.now();
  await publishAll(
    client.nc,
    Array.from({ length: costly }, (_, i) => costlyCron(`santiago-${i}`)),
    { inFlight: 1_000, timeoutMs: 120_000, label: "catchUpFlood costly tenant" },
  );
  await events.waitFor(costly + QUIET, 600_000, "catchUpFlood");
  const health = await stopProbe();
  await stopService(service);
  const quiet = events.bodies.filter((e) => e.body.tenantId === "bench-b");
  const noisy = events.bodies.filter((e) => e.body.tenantId === "bench-a");
  const lateness = summary(quiet.map((e) => e.receivedAtMs - Date.parse(e.body.payload.dueAt as string)));
  const healthMs = summary(health);
  const catchUpSeconds = round((Math.max(...noisy.map((e) => e.receivedAtMs)) - sentAtMs) / 1000, 2);
  ctx.log(
    `${costly} costly catch-ups: B lateness p50/p99/max ${lateness?.p50}/${lateness?.p99}/${lateness?.max} ms; /healthz p99/max ${healthMs?.p99}/${healthMs?.max} ms; A's catch-ups done in ${catchUpSeconds} s`,
  );
  return { costly, quietLatenessMs: lateness, healthzMs: healthMs, catchUpSeconds };
}

export async function catchUpFlood(ctx: BenchContext): Promise<Record<string, unknown>> {
  return { hundred: await flood(ctx, 100), thousand: await flood(ctx, ctx.quick ? 200 : 1_000) };
}
