/**
 * Ingest fairness and the cost per item (CONTRACT §12, ADR-0009), on the store given with --store:
 *
 * - commandFlood: tenant A's 200,000 ScheduleTimer commands (due in a day) wait in the commands
 *   stream when the service starts; right after it is ready tenant B (in another partition than A)
 *   and tenant C (in A's partition) each send 20 commands, one every 100 ms, each due at once.
 *   Reports B's and C's command-to-event latency (publish → DueTimeReached; the event follows the
 *   store by a poll, a few ms) p50 / max, and A's drain time, for the build of main before ingest
 *   fairness (FLOOD_BEFORE_COMMIT), main before the backlog bypass (BYPASS_BEFORE_COMMIT: C waits
 *   for A's partition) and this build, in the same run.
 * - cpuPerItem: 50,000 commands scheduled while the service runs, all due at one instant: service
 *   CPU per command (from the first publish until all are stored) and per event (from the due
 *   instant until all events arrived), for main before fair firing (CPU_BEFORE_COMMIT), main before
 *   the write path was narrowed (BEFORE_WRITE_LESS_COMMIT) and this build, in the same run.
 *
 *   npm run bench -- --only commandFlood,cpuPerItem
 */
import { brokerPartitionOf } from "../../../test/support/command-consumers.js";
import { BEFORE_WRITE_LESS_COMMIT, ensureBaselineBuild } from "../baseline.js";
import {
  BenchClient,
  COMMANDS_CONSUMER,
  COMMANDS_STREAM,
  CpuMeter,
  DueEventCollector,
  natsPid,
  publishAll,
  round,
  scaled,
  scheduleMessage,
  sleep,
  startNats,
  startService,
  stopService,
  summary,
  waitConsumerDrained,
  type BenchContext,
} from "../harness.js";

/** main before ingest fairness: one commands consumer for all tenants. */
export const FLOOD_BEFORE_COMMIT = "0fd4785";
/** main before the backlog bypass: partitions by tenant, each read in stream order (ADR-0010). */
export const BYPASS_BEFORE_COMMIT = "cd2f58e";
/** main before fair firing, quotas and ingest fairness. */
export const CPU_BEFORE_COMMIT = "ccc0d74";

const FLOODING = "bench-a";
/** TIMER_COMMAND_PARTITIONS's default: B is picked outside A's partition, C inside it. */
const PARTITIONS = 8;

function partitionOf(tenantId: string): number {
  return brokerPartitionOf(tenantId, PARTITIONS);
}

const QUIET = ["bench-b", "bench-b1", "bench-b2", "bench-b3"].find((t) => partitionOf(t) !== partitionOf(FLOODING))!;
/** A tenant that shares the flooder's partition (the broker's FNV-1a hash of the tenant token). */
const SHARING = Array.from({ length: 64 }, (_, i) => `bench-c${i}`).find((t) => partitionOf(t) === partitionOf(FLOODING))!;

async function floodRun(ctx: BenchContext, label: string, n: number, entry: string | undefined, env: Record<string, string> = {}) {
  const nats = await startNats(ctx);
  // A first start makes the streams (partitioned when this build partitions), then A's commands queue.
  await stopService(await startService(ctx, nats.url, `${label}-setup`, env, entry));
  const client = await BenchClient.connect(ctx, nats.url);
  const farMs = Date.now() + 86_400_000;
  const flood = Array.from({ length: n }, (_, i) => scheduleMessage(FLOODING, `a-${i}`, farMs));
  await publishAll(client.nc, flood, { inFlight: 2_000, timeoutMs: 600_000, label: `${label} flood` });
  const events = new DueEventCollector(ctx, client.nc, `timer.events.due.${QUIET}`, true);
  const sharingEvents = new DueEventCollector(ctx, client.nc, `timer.events.due.${SHARING}`, true);
  await client.nc.flush();

  const service = await startService(ctx, nats.url, label, env, entry);
  const startedMs = performance.now();
  const cpu = new CpuMeter({ service: service.pid, nats: natsPid(nats) });
  const queuedAtStart = await client.consumerBacklog(COMMANDS_STREAM, COMMANDS_CONSUMER);
  const sentAt = new Map<string, number>();
  const quietCount = 20;
  for (let i = 0; i < quietCount; i++) {
    // B and C alternate; ids are unique per tenant, so one map holds both.
    for (const [tenant, id] of [
      [QUIET, `b-${i}`],
      [SHARING, `c-${i}`],
    ] as const) {
      const message = scheduleMessage(tenant, id, Date.now());
      sentAt.set(id, Date.now());
      client.nc.publish(message.subject, message.data);
    }
    await sleep(100);
  }
  const drained = await waitConsumerDrained(client, COMMANDS_STREAM, COMMANDS_CONSUMER, { timeoutMs: 900_000, what: `${label} drained` });
  const { serviceBusy, natsBusy, serviceUsPerItem } = cpu.read(n);
  await events.waitFor(quietCount, 300_000, `${label} B's events`);
  await sharingEvents.waitFor(quietCount, 300_000, `${label} C's events`);
  await stopService(service);
  const latency = (collector: DueEventCollector) =>
    collector.bodies.map((e) => e.receivedAtMs - sentAt.get(e.body.payload.serviceCallId as string)!);
  return {
    queuedAtStart: queuedAtStart.pending + queuedAtStart.ackPending,
    quietLatencyMs: summary(latency(events)),
    sharingLatencyMs: summary(latency(sharingEvents)),
    floodDrainSeconds: round((drained.perfMs - startedMs) / 1000, 2),
    serviceBusy,
    natsBusy,
    serviceUsPerCommand: serviceUsPerItem,
  };
}

export async function commandFlood(ctx: BenchContext): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 200_000);
  const baseline = ensureBaselineBuild(FLOOD_BEFORE_COMMIT);
  const before = await floodRun(ctx, "commandFlood-before", n, baseline.entry);
  // This build with one partition: the design alone, apart from everything else since the commit above.
  const onePartition = await floodRun(ctx, "commandFlood-onePartition", n, undefined, { TIMER_COMMAND_PARTITIONS: "1" });
  const beforeBypass = await floodRun(ctx, "commandFlood-beforeBypass", n, ensureBaselineBuild(BYPASS_BEFORE_COMMIT).entry);
  const after = await floodRun(ctx, "commandFlood", n, undefined);
  for (const [name, run] of [
    [FLOOD_BEFORE_COMMIT, before],
    ["one partition", onePartition],
    [`${BYPASS_BEFORE_COMMIT} (before the bypass)`, beforeBypass],
    ["now", after],
  ] as const) {
    ctx.log(
      `${name}: B's command → event p50/max ${run.quietLatencyMs?.p50}/${run.quietLatencyMs?.max} ms, ` +
        `C's (in A's partition) ${run.sharingLatencyMs?.p50}/${run.sharingLatencyMs?.max} ms; A's ${n} drained in ` +
        `${run.floodDrainSeconds} s (service ${run.serviceBusy} cores, nats-server ${run.natsBusy} cores)`,
    );
  }
  return {
    flood: n,
    quietTenant: QUIET,
    sharingTenant: SHARING,
    before: { commit: FLOOD_BEFORE_COMMIT, ...before },
    onePartition,
    beforeBypass: { commit: BYPASS_BEFORE_COMMIT, ...beforeBypass },
    after,
  };
}

async function cpuRun(ctx: BenchContext, label: string, n: number, entry: string | undefined, env: Record<string, string> = {}) {
  const nats = await startNats(ctx);
  const service = await startService(ctx, nats.url, label, env, entry);
  const client = await BenchClient.connect(ctx, nats.url);
  const events = new DueEventCollector(ctx, client.nc, "timer.events.due.>");
  await client.nc.flush();
  const dueAtMs = Math.ceil((Date.now() + 60_000) / 1000) * 1000;
  const messages = Array.from({ length: n }, (_, i) => scheduleMessage(`t-${i % 100}`, `c-${i}`, dueAtMs));
  const ingestCpu = new CpuMeter({ service: service.pid });
  let published = false;
  await Promise.all([
    publishAll(client.nc, messages, { inFlight: 2_000, timeoutMs: 600_000, label: `${label} ingest` }).then(() => (published = true)),
    waitConsumerDrained(client, COMMANDS_STREAM, COMMANDS_CONSUMER, {
      timeoutMs: 600_000,
      what: `${label} stored`,
      published: () => published,
    }),
  ]);
  const perCommand = ingestCpu.read(n);
  const valid = Date.now() < dueAtMs - 500;
  await sleep(dueAtMs - Date.now());
  const fireCpu = new CpuMeter({ service: service.pid });
  await events.waitFor(n, 600_000, `${label} events`);
  const perEvent = fireCpu.read(n);
  await stopService(service);
  return { valid, usPerCommand: perCommand.serviceUsPerItem, usPerEvent: perEvent.serviceUsPerItem };
}

export async function cpuPerItem(ctx: BenchContext): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 50_000);
  const baseline = ensureBaselineBuild(CPU_BEFORE_COMMIT);
  const before = await cpuRun(ctx, "cpuPerItem-before", n, baseline.entry);
  const beforeWriteLess = await cpuRun(ctx, "cpuPerItem-beforeWriteLess", n, ensureBaselineBuild(BEFORE_WRITE_LESS_COMMIT).entry);
  const onePartition = await cpuRun(ctx, "cpuPerItem-onePartition", n, undefined, { TIMER_COMMAND_PARTITIONS: "1" });
  const after = await cpuRun(ctx, "cpuPerItem", n, undefined);
  const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : round(a / b, 2));
  const result = {
    items: n,
    before: { commit: CPU_BEFORE_COMMIT, ...before },
    beforeWriteLess: { commit: BEFORE_WRITE_LESS_COMMIT, ...beforeWriteLess },
    onePartition,
    after,
    commandRatio: ratio(after.usPerCommand, before.usPerCommand),
    commandRatioToOnePartition: ratio(after.usPerCommand, onePartition.usPerCommand),
    eventRatio: ratio(after.usPerEvent, before.usPerEvent),
    commandRatioToBeforeWriteLess: ratio(after.usPerCommand, beforeWriteLess.usPerCommand),
    eventRatioToBeforeWriteLess: ratio(after.usPerEvent, beforeWriteLess.usPerEvent),
  };
  ctx.log(
    `service CPU per command ${before.usPerCommand} → ${after.usPerCommand} µs (${result.commandRatio}×), ` +
      `per event ${before.usPerEvent} → ${after.usPerEvent} µs (${result.eventRatio}×); ` +
      `with one partition ${onePartition.usPerCommand} µs per command, ${onePartition.usPerEvent} µs per event; ` +
      `before the write path was narrowed ${beforeWriteLess.usPerCommand} µs per command, ${beforeWriteLess.usPerEvent} µs per event`,
  );
  return result;
}
