/**
 * queriesAt1M: the service on a store holding 1M Scheduled timers of one tenant (the worst case for
 * counting: `stats` reads counters kept by triggers, on either store), while a trickle of timers fires (20/s, each
 * scheduled 1 s ahead). Two windows of equal length: without queries, then with 200 queries/s over
 * NATS from this process (get, list of 100, stats in turn). Reports each endpoint's latency
 * (request to reply, p50/p99) and the trickle's fire lag (receive time − dueAt) in both windows.
 * Targets: get p99 ≤ 2 ms, list(100) p99 ≤ 10 ms, stats p99 ≤ 50 ms, fire lag p99 ≤ 20 ms.
 *
 * retentionSweep: 1M Reached rows last changed two hours ago. A trickle window with retention off
 * (TIMER_RETENTION_HOURS=0), then the same with TIMER_RETENTION_HOURS=1 while the sweep deletes
 * them (500 rows per transaction). Reports both fire-lag p99s, their ratio (target ≤ 2) and the
 * deletion rate. The stored rows are written straight into the database (like pollAt1M).
 */
import Database from "better-sqlite3";
import { recountTallies } from "../../../src/adapters/sqlite/batch-tallies.js";
import {
  BenchClient,
  DueEventCollector,
  callId,
  metricSum,
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

const TRICKLE_TENANT = "bench-trickle";
const TRICKLE_PER_SEC = 20;
const QUERIES_PER_SEC = 200;

/** Schedules the trickle for `windowMs` and returns each event's lag (receive − due), in ms. */
async function trickle(ctx: BenchContext, client: BenchClient, label: string, windowMs: number): Promise<number[]> {
  const events = new DueEventCollector(ctx, client.nc, `timer.events.due.${TRICKLE_TENANT}`, true);
  await client.nc.flush();
  const total = Math.round((TRICKLE_PER_SEC * windowMs) / 1000);
  const due = new Map<string, number>();
  const t0 = Date.now();
  const publishes: Promise<unknown>[] = [];
  for (let i = 0; i < total; i++) {
    await sleep(t0 + (i * 1000) / TRICKLE_PER_SEC - Date.now());
    const id = callId(`${label}-`, i);
    const dueAtMs = Date.now() + 1_000;
    due.set(id, dueAtMs);
    const message = scheduleMessage(TRICKLE_TENANT, id, dueAtMs);
    publishes.push(client.js.publish(message.subject, message.data).catch(() => undefined));
  }
  await Promise.all(publishes);
  await events.waitFor(total, 20_000, label).catch((error: unknown) => ctx.log(String(error)));
  return events.bodies.flatMap(({ receivedAtMs, body }) => {
    const dueAtMs = due.get(body.payload?.serviceCallId);
    return dueAtMs === undefined ? [] : [receivedAtMs - dueAtMs];
  });
}

/** Sends queries at `perSec` until `until()` says stop; latencies per endpoint in ms. */
async function queryLoad(client: BenchClient, tenant: string, count: number, perSec: number, stop: { done: boolean }) {
  const latencies: Record<"get" | "list" | "stats", number[]> = { get: [], list: [], stats: [] };
  let errors = 0;
  const t0 = Date.now();
  const inFlight: Promise<void>[] = [];
  for (let i = 0; !stop.done; i++) {
    await sleep(t0 + (i * 1000) / perSec - Date.now());
    const endpoint = (["get", "list", "stats"] as const)[i % 3]!;
    const body =
      endpoint === "get"
        ? { serviceCallId: callId("p", Math.floor(Math.random() * count)) }
        : endpoint === "list"
          ? {
              state: "Scheduled",
              limit: 100,
              dueAfter: new Date(Date.now() + 86_400_000 + Math.floor(Math.random() * 20 * 86_400_000)).toISOString(),
            }
          : {};
    const started = performance.now();
    inFlight.push(
      client.nc.request(`timer.query.${endpoint}.${tenant}`, JSON.stringify(body), { timeout: 10_000 }).then(
        (reply) => {
          if (reply.headers?.get("Nats-Service-Error-Code")) errors++;
          else latencies[endpoint].push(performance.now() - started);
        },
        () => void errors++,
      ),
    );
  }
  await Promise.all(inFlight);
  return { latencies, errors, sent: inFlight.length };
}

const p = (values: number[]) => {
  const s = summary(values);
  return s === undefined ? undefined : { n: values.length, p50: round(s.p50, 2), p99: round(s.p99, 2), max: round(s.max, 2) };
};

export async function queriesAt1M(ctx: BenchContext): Promise<Record<string, unknown>> {
  const count = scaled(ctx, 1_000_000);
  const windowMs = ctx.quick ? 5_000 : 20_000;
  const nats = await startNats(ctx);
  const service = await startService(ctx, nats.url, "queriesAt1M");
  const client = await BenchClient.connect(ctx, nats.url);
  const base = Date.now() + 86_400_000;
  const span = 30 * 86_400_000;
  const { populate } = await withRowsInserted(ctx, service, {
    count,
    tenantId: "bench-q",
    idPrefix: "p",
    dueAtMs: (i) => base + Math.floor((i * span) / count),
    label: "queriesAt1M",
  });
  await restartService(service);
  await sleep(2_000);

  ctx.log(`window without queries (${windowMs / 1000} s)`);
  const quiet = await trickle(ctx, client, "quiet", windowMs);
  ctx.log(`window with ${QUERIES_PER_SEC} queries/s`);
  const stop = { done: false };
  const load = queryLoad(client, "bench-q", count, QUERIES_PER_SEC, stop);
  const busy = await trickle(ctx, client, "busy", windowMs);
  stop.done = true;
  const { latencies, errors, sent } = await load;
  const after = await scrape(service);
  await stopService(service);
  const result = {
    stored: count,
    populate,
    windowS: windowMs / 1000,
    queriesSent: sent,
    queryErrors: errors,
    getMs: p(latencies.get),
    list100Ms: p(latencies.list),
    statsMs: p(latencies.stats),
    fireLagWithoutQueriesMs: p(quiet),
    fireLagUnderQueriesMs: p(busy),
    queriesCounted: metricSum(after, "timer_queries_total"),
  };
  ctx.log(
    `get p99 ${result.getMs?.p99} ms, list p99 ${result.list100Ms?.p99} ms, stats p99 ${result.statsMs?.p99} ms; fire lag p99 ${result.fireLagWithoutQueriesMs?.p99} → ${result.fireLagUnderQueriesMs?.p99} ms`,
  );
  return result;
}

/** Writes `count` Reached rows last changed `ageMs` ago into the service's (stopped) database. */
function populateFinal(dbPath: string, count: number, ageMs: number): number {
  const t0 = performance.now();
  const db = new Database(dbPath);
  try {
    db.pragma("synchronous = OFF");
    const changedAt = Date.now() - ageMs;
    const insert = db.prepare(
      "INSERT INTO timer_schedules (tenant_id, service_call_id, state, due_at, command_ts, registered_at, reached_at, updated_at) VALUES ('bench-old', ?, 'Reached', ?, ?, ?, ?, ?)",
    );
    const range = db.transaction((from: number, to: number) => {
      for (let i = from; i < to; i++)
        insert.run(callId("old", i), changedAt - 1_000, changedAt - 2_000, changedAt - 2_000, changedAt, changedAt);
    });
    for (let from = 0; from < count; from += 100_000) range(from, Math.min(count, from + 100_000));
    // Rows written around the store: its counts and due tenants are recounted.
    db.transaction(() => recountTallies(db))();
    db.pragma("wal_checkpoint(TRUNCATE)");
  } finally {
    db.close();
  }
  return round((performance.now() - t0) / 1000, 1);
}

export async function retentionSweep(ctx: BenchContext): Promise<Record<string, unknown>> {
  if (ctx.store === "postgres") throw new Error("retentionSweep fills a SQLite file directly: it runs with --store sqlite only");
  const count = scaled(ctx, 1_000_000);
  const windowMs = ctx.quick ? 5_000 : 20_000;
  const nats = await startNats(ctx);
  const service = await startService(ctx, nats.url, "retentionSweep", { TIMER_RETENTION_HOURS: "0" });
  const client = await BenchClient.connect(ctx, nats.url);
  await stopService(service);
  ctx.log(`inserting ${count} Reached rows changed 2 h ago`);
  const populateS = populateFinal(service.env.TIMER_DB_PATH!, count, 2 * 3_600_000);
  await restartService(service);
  await sleep(2_000);
  ctx.log(`window with retention off (${windowMs / 1000} s)`);
  const without = await trickle(ctx, client, "keep", windowMs);
  await stopService(service);
  service.env.TIMER_RETENTION_HOURS = "1";
  await restartService(service);
  const sweepStart = Date.now();
  ctx.log(`window while the sweep deletes ${count} rows`);
  const during = await trickle(ctx, client, "sweep", windowMs);
  const deletedInWindow = metricSum(await scrape(service), "timer_schedules_deleted_total");
  const windowS = (Date.now() - sweepStart) / 1000;
  await stopService(service);
  const lagWithout = p(without);
  const lagDuring = p(during);
  const result = {
    oldRows: count,
    populateS,
    windowS: windowMs / 1000,
    fireLagWithoutSweepMs: lagWithout,
    fireLagDuringSweepMs: lagDuring,
    p99Ratio: lagWithout === undefined || lagDuring === undefined ? undefined : round(lagDuring.p99 / Math.max(1, lagWithout.p99), 2),
    deletedDuringWindow: deletedInWindow,
    deletedPerSec: Math.round(deletedInWindow / windowS),
  };
  ctx.log(
    `fire lag p99 ${lagWithout?.p99} ms without, ${lagDuring?.p99} ms during the sweep; ${deletedInWindow} rows deleted (${result.deletedPerSec}/s)`,
  );
  return result;
}
