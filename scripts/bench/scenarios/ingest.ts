/**
 * ingest: ScheduleTimer commands per second that the service stores and acks.
 *  - empty: N commands into an empty store, published with 2000 in flight while the service
 *    consumes; from the first publish until the durable consumer has nothing pending and nothing
 *    unacked (the service acks only after commit).
 *  - backlog: the service stopped, N more commands published, the service started: from its first
 *    delivery until drained. Nothing competes with the service for the CPU but nats-server, so
 *    this is the service's own consume rate (compare with rawCeiling.consumePerSec).
 *  - pending1M: like empty, on a store pre-populated with 1,000,000 Scheduled rows.
 * Commands use keys and due times spread over those of the pre-populated rows, so rows land at
 * random places of the primary key and the due index (as UUID-keyed traffic would).
 */
import type { TimerServiceProcess } from "../../../test/support/timer-service-process.js";
import {
  BenchClient,
  COMMANDS_CONSUMER,
  COMMANDS_STREAM,
  CpuMeter,
  Scope,
  memoryOf,
  metricSum,
  monoUs,
  natsPid,
  prng,
  publishAll,
  restartService,
  round,
  scaled,
  scheduleMessage,
  scrape,
  serviceCoreBoundPerSec,
  startNats,
  startService,
  stopService,
  waitConsumerDrained,
  waitUntil,
  withRowsInserted,
  type BenchContext,
  type OutMessage,
} from "../harness.js";

const IN_FLIGHT = 2_000;
const TENANT = "bench";
const HORIZON_START_MS = 86_400_000; // due between 1 and 31 days ahead: never fires during the bench
const HORIZON_SPAN_MS = 30 * 86_400_000;

export async function ingest(ctx: BenchContext): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 100_000);
  const pendingCount = scaled(ctx, 1_000_000);
  const result: Record<string, unknown> = { commands: n, inFlight: IN_FLIGHT };

  await inScope(ctx, "ingest empty", async (sub) => {
    const { service, client, pids } = await setUp(sub, "ingest-empty");
    result.empty = await measure(sub, service, client, pids, commands(n, pendingCount, 1), "empty", "ingest-empty");
    result.backlog = await measureBacklog(sub, service, client, pids, commands(n, pendingCount, 2), "ingest-empty");
    await stopService(service);
  });

  await inScope(ctx, "ingest pending1M", async (sub) => {
    const { service, client, pids } = await setUp(sub, "ingest-1m");
    const base = Date.now() + HORIZON_START_MS;
    const { populate } = await withRowsInserted(sub, service, {
      count: pendingCount,
      tenantId: TENANT,
      idPrefix: "t",
      dueAtMs: (i) => base + Math.floor((i * HORIZON_SPAN_MS) / pendingCount),
      label: "ingest pending1M",
    });
    const started = await restartService(service);
    pids.service = service.pid;
    sub.log(`service restarted on ${pendingCount} rows in ${started.startupS.toFixed(2)} s`);
    const pendingGauge = metricSum(await scrape(service), "timer_schedules_pending");
    const measured = await measure(sub, service, client, pids, commands(n, pendingCount, 3), "pending1M", "ingest-1m");
    result.pending1M = { pendingBefore: pendingGauge, populate, startupS: round(started.startupS, 2), ...measured };
    await stopService(service);
  });
  return result;
}

async function inScope(ctx: BenchContext, name: string, body: (sub: BenchContext) => Promise<void>): Promise<void> {
  const scope = new Scope(name);
  try {
    await body({ ...ctx, scope, log: (m) => ctx.log(`${name.replace(/^ingest /, "")}: ${m}`) });
  } finally {
    await scope.close();
  }
}

async function setUp(ctx: BenchContext, label: string) {
  const nats = await startNats(ctx);
  const service = await startService(ctx, nats.url, label);
  const client = await BenchClient.connect(ctx, nats.url);
  const pids: Record<string, number | undefined> = { service: service.pid, nats: natsPid(nats) };
  return { service, client, pids };
}

/**
 * N ScheduleTimer commands; `salt` keeps keys of different batches apart. Keys are `t-{slot}-…`
 * with a random slot among the pre-populated rows' `t-{i}`, and due times random in the same span.
 */
function commands(n: number, keySpace: number, salt: number): OutMessage[] {
  const random = prng(0x5eed + salt);
  const base = Date.now() + HORIZON_START_MS;
  return Array.from({ length: n }, (_, i) => {
    const slot = String(Math.floor(random() * keySpace)).padStart(8, "0");
    return scheduleMessage(TENANT, `t-${slot}-${salt}.${i}`, base + Math.floor(random() * HORIZON_SPAN_MS));
  });
}

async function measure(
  ctx: BenchContext,
  service: TimerServiceProcess,
  client: BenchClient,
  pids: Record<string, number | undefined>,
  messages: readonly OutMessage[],
  label: string,
  serviceLabel: string,
): Promise<Record<string, unknown>> {
  const n = messages.length;
  const before = metricSum(await scrape(service), "timer_commands_received_total");
  const cpu = new CpuMeter(pids);
  const fromUs = monoUs();
  let published = false;
  const publishing = publishAll(client.nc, messages, { inFlight: IN_FLIGHT, timeoutMs: 600_000, label: `ingest ${label}` }).then((r) => {
    published = true;
    return r;
  });
  const drained = await Promise.all([
    waitConsumerDrained(client, COMMANDS_STREAM, COMMANDS_CONSUMER, {
      timeoutMs: 600_000,
      what: `ingest ${label} drained`,
      published: () => published,
    }),
    publishing,
  ]);
  const [{ perfMs: drainedPerf }, pub] = drained;
  const cpuRead = cpu.read(n);
  ctx.profileWindows.push({ label: serviceLabel, name: `ingest ${label}`, fromUs, toUs: monoUs() });
  const seconds = (drainedPerf - pub.firstPerfMs) / 1000;
  const after = await scrape(service);
  const received = metricSum(after, "timer_commands_received_total") - before;
  const accepted = after.get('timer_commands_received_total{type="ScheduleTimer",outcome="accepted"}');
  ctx.log(`${n} commands in ${seconds.toFixed(2)} s → ${Math.round(n / seconds)}/s (service busy ${cpuRead.serviceBusy ?? "?"} cores)`);
  if (received < n) ctx.log(`WARNING: the service counted only ${received} of ${n} commands`);
  return {
    commandsPerSec: Math.round(n / seconds),
    seconds: round(seconds, 2),
    publishPerSec: Math.round(n / ((pub.lastAckPerfMs - pub.firstPerfMs) / 1000)),
    received,
    acceptedTotal: accepted,
    publishRetries: pub.retries,
    serviceMemory: memoryOf(service.pid),
    serviceCoreBoundPerSec: serviceCoreBoundPerSec(cpuRead),
    cpu: cpuRead,
  };
}

async function measureBacklog(
  ctx: BenchContext,
  service: TimerServiceProcess,
  client: BenchClient,
  pids: Record<string, number | undefined>,
  messages: readonly OutMessage[],
  serviceLabel: string,
): Promise<Record<string, unknown>> {
  const n = messages.length;
  await stopService(service);
  await publishAll(client.nc, messages, { inFlight: IN_FLIGHT, timeoutMs: 600_000, label: "ingest backlog publish" });
  const baseline = await client.consumerBacklog(COMMANDS_STREAM, COMMANDS_CONSUMER);
  ctx.log(`backlog of ${baseline.pending} commands in the stream; starting the service`);
  const restarting = restartService(service);
  // The first delivery to the new process marks the start (its start-up is not ingest).
  const first = await waitUntil(
    async () => (await client.consumerBacklog(COMMANDS_STREAM, COMMANDS_CONSUMER)).delivered > baseline.delivered,
    { timeoutMs: 120_000, intervalMs: 5, what: "first delivery to the restarted service" },
  );
  pids.service = service.pid;
  const cpu = new CpuMeter(pids);
  const fromUs = monoUs();
  const drained = await waitConsumerDrained(client, COMMANDS_STREAM, COMMANDS_CONSUMER, { timeoutMs: 600_000, what: "backlog drained" });
  const cpuRead = cpu.read(n);
  ctx.profileWindows.push({ label: serviceLabel, name: "ingest backlog", fromUs, toUs: monoUs() });
  const started = await restarting;
  const seconds = (drained.perfMs - first.perfMs) / 1000;
  ctx.log(
    `backlog: ${n} commands in ${seconds.toFixed(2)} s → ${Math.round(n / seconds)}/s (service busy ${cpuRead.serviceBusy ?? "?"} cores)`,
  );
  return {
    commandsPerSec: Math.round(n / seconds),
    seconds: round(seconds, 2),
    startupS: round(started.startupS, 2),
    serviceCoreBoundPerSec: serviceCoreBoundPerSec(cpuRead),
    cpu: cpuRead,
  };
}
