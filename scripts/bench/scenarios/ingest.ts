/**
 * ingest: ScheduleTimer commands per second that the service stores and acks.
 *  - empty: N commands into an empty store, published with 2000 in flight while the service
 *    consumes; from the first publish until the durable consumer has nothing pending and nothing
 *    unacked (the service acks only after commit).
 *  - backlog: the service stopped, N more commands published, the service started: from its first
 *    delivery until drained. Nothing competes with the service for the CPU but nats-server, so
 *    this is the service's own consume rate (compare with rawCeiling.consumePerSec).
 *  - pending1M: like empty, on a store pre-populated with 1,000,000 Scheduled rows.
 *  - backlogVsV1: the backlog drain of the current service, of main before the write path was narrowed
 *    tuning (commit f866702) and of v1 (commit f91ce85), both built by baseline.ts, in the same
 *    run, each on a fresh nats-server and an empty SQLite store, in the order current, before, v1,
 *    v1, before, current (drift on a shared machine shows as a difference between the two rounds
 *    of a version, and cancels in their mean when linear), with the raw JetStream consume ceiling
 *    measured before and after. Reports the service CPU µs per command of each version, the ratio
 *    against the targets (current ≤ 1.0 × v1 and ≤ 0.7 × before), and drain rates / raw consume.
 * Commands use keys and due times spread over those of the pre-populated rows, so rows land at
 * random places of the primary key and the due index (as UUID-keyed traffic would).
 */
import type { TimerServiceProcess } from "../../../test/support/timer-service-process.js";
import { BEFORE_WRITE_LESS_COMMIT, V1_COMMIT, ensureBaselineBuild, type BaselineBuild } from "../baseline.js";
import { measureRawConsume } from "./raw-ceiling.js";
import {
  BenchClient,
  COMMANDS_CONSUMER,
  COMMANDS_STREAM,
  CpuMeter,
  Scope,
  loadAverage,
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
  const rateOf = (phase: unknown): number | undefined => (phase as { commandsPerSec?: number } | undefined)?.commandsPerSec;
  const [emptyRate, pendingRate] = [rateOf(result.empty), rateOf(result.pending1M)];
  /** Ingest rate on a store holding 1M pending timers against the empty store's, same run. */
  if (emptyRate !== undefined && pendingRate !== undefined && emptyRate > 0) result.pending1MToEmpty = round(pendingRate / emptyRate, 2);

  // Last, so that a missing v1 (shallow clone) costs none of the figures above; reported under
  // backlogVsV1.error (the runner counts it as a failure).
  try {
    result.backlogVsV1 = await backlogVsV1(ctx, n, pendingCount);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    ctx.log(`backlogVsV1 FAILED: ${message}`);
    result.backlogVsV1 = { error: message };
  }
  return result;
}

/** The builds compared: the working tree, main before the write path was narrowed, and v1. */
type Version = "current" | "before" | "v1";
const BUILD_COMMITS: Record<Exclude<Version, "current">, string> = { before: BEFORE_WRITE_LESS_COMMIT, v1: V1_COMMIT };
/** Mirrored: a linear drift of the machine cancels in each version's mean; a step shows between its rounds. */
const ROUND_ORDER: readonly Version[] = ["current", "before", "v1", "v1", "before", "current"];
/** The TIMER_DB_SYNCHRONOUS default of each version (v1: NORMAL; FULL since v2). */
const SYNCHRONOUS_DEFAULT: Record<Version, string> = { current: "FULL", before: "FULL", v1: "NORMAL" };
/** Backlog drain CPU per command: current / v1 and current / before. */
const TARGET_TO_V1 = 1.0;
const TARGET_TO_BEFORE = 0.7;

/**
 * The targets: backlog drain CPU per command of the current service ≤ v1's and ≤ 0.7 × main's
 * before the write path was narrowed (`before`), all measured in the same rounds of this run, so that
 * one run gives before / after / v1. Every round: a fresh nats-server and an empty SQLite store,
 * the service started once (streams, consumer, migrations) and stopped, N commands queued, the
 * service started again and measured from its first delivery until drained (measureBacklog). All
 * versions get the same environment (their own defaults otherwise); always SQLite, v1's only store.
 */
async function backlogVsV1(ctx: BenchContext, n: number, keySpace: number): Promise<Record<string, unknown>> {
  const builds = Object.fromEntries(
    Object.entries(BUILD_COMMITS).map(([version, commit]) => {
      const build = ensureBaselineBuild(commit);
      ctx.log(
        `backlogVsV1: ${version} = ${build.commitHash.slice(0, 12)} (${build.built ? `built in ${build.buildS} s` : "cached build"})`,
      );
      return [version, build];
    }),
  ) as Record<Exclude<Version, "current">, BaselineBuild>;
  const sqliteCtx: BenchContext = { ...ctx, store: "sqlite" };

  const raw: Record<string, unknown>[] = [];
  const rawRound = async (at: string): Promise<void> => {
    await inScope(sqliteCtx, `ingest vsV1 raw ${at}`, async (sub) => {
      const measured = await measureRawConsume(sub, n);
      sub.log(`raw consume ${n} in ${measured.seconds} s → ${measured.consumePerSec}/s`);
      raw.push({ at, ...measured, loadAverage1m: loadAverage()[0] });
    });
  };

  await rawRound("before");
  const rounds: Record<string, unknown>[] = [];
  const cpuPer: Record<Version, number[]> = { current: [], before: [], v1: [] };
  const ratePer: Record<Version, number[]> = { current: [], before: [], v1: [] };
  for (const [i, version] of ROUND_ORDER.entries()) {
    await inScope(sqliteCtx, `ingest vsV1 ${i + 1} ${version}`, async (sub) => {
      const label = `ingest-vsv1-${i + 1}-${version}`;
      const nats = await startNats(sub);
      const service = await startService(sub, nats.url, label, {}, version === "current" ? undefined : builds[version].entry);
      const client = await BenchClient.connect(sub, nats.url);
      const pids: Record<string, number | undefined> = { service: service.pid, nats: natsPid(nats) };
      const measured = await measureBacklog(
        sub,
        service,
        client,
        pids,
        commands(n, keySpace, 10 + i),
        label,
        `ingest vsV1 ${i + 1} ${version}`,
      );
      await stopService(service);
      const cpu = measured.cpu as Record<string, number>;
      const us = cpu.serviceUsPerItem;
      const rate = measured.commandsPerSec as number;
      if (us !== undefined) cpuPer[version].push(us);
      ratePer[version].push(rate);
      rounds.push({
        round: i + 1,
        version,
        usPerCommand: us,
        commandsPerSec: rate,
        seconds: measured.seconds,
        startupS: measured.startupS,
        serviceBusy: cpu.serviceBusy,
        serviceMainStarved: cpu.serviceMainStarved,
        /** The CPU per command by thread: the event loop, the busiest other thread (current: the writer), the rest. */
        threadsUsPerCommand: { main: cpu.serviceMainUsPerItem, second: cpu.serviceSecondUsPerItem, rest: cpu.serviceRestUsPerItem },
        natsUsPerCommand: cpu.natsUsPerItem,
        serviceWrittenKBPerCommand: cpu.serviceWrittenKBPerItem,
        loadAverage1m: loadAverage()[0],
      });
      sub.log(
        `round ${i + 1} ${version}: ${us ?? "?"} µs/cmd (main thread ${cpu.serviceMainUsPerItem ?? "?"}, second ${cpu.serviceSecondUsPerItem ?? "?"}, rest ${cpu.serviceRestUsPerItem ?? "?"}), ${rate}/s`,
      );
    });
  }
  await rawRound("after");

  const mean = (values: readonly number[]): number | undefined =>
    values.length === 0 ? undefined : values.reduce((a, b) => a + b, 0) / values.length;
  const [currentUs, beforeUs, v1Us] = [cpuPer.current, cpuPer.before, cpuPer.v1].map(mean);
  const [currentRate, beforeRate, v1Rate] = [ratePer.current, ratePer.before, ratePer.v1].map(mean);
  const rawRate = mean(raw.map((r) => r.consumePerSec as number));
  const ratioOf = (a: number | undefined, b: number | undefined): number | undefined =>
    a !== undefined && b !== undefined && b > 0 ? round(a / b, 3) : undefined;
  const ratio = ratioOf(currentUs, v1Us);
  const toBefore = ratioOf(currentUs, beforeUs);
  const targetMet = ratio === undefined || toBefore === undefined ? undefined : ratio <= TARGET_TO_V1 && toBefore <= TARGET_TO_BEFORE;
  const toRaw = (rate: number | undefined, base: number | undefined): number | undefined =>
    rate !== undefined && base !== undefined && base > 0 ? round(rate / base, 2) : undefined;
  const earlierRaw = (ctx.earlier.rawCeiling as { consumePerSec?: number } | undefined)?.consumePerSec;
  const synchronous = (version: Version): string => process.env.TIMER_DB_SYNCHRONOUS ?? `${SYNCHRONOUS_DEFAULT[version]} (default)`;
  const us = (value: number | undefined): number | undefined => (value === undefined ? undefined : round(value, 1));
  const perSec = (value: number | undefined): number | undefined => (value === undefined ? undefined : Math.round(value));
  ctx.log(
    `backlogVsV1: current ${us(currentUs) ?? "?"} µs/cmd, before ${us(beforeUs) ?? "?"}, v1 ${us(v1Us) ?? "?"} → to v1 ${ratio ?? "?"} (target ≤ ${TARGET_TO_V1}), to before ${toBefore ?? "?"} (target ≤ ${TARGET_TO_BEFORE})`,
  );
  return {
    commands: n,
    v1Commit: builds.v1.commitHash.slice(0, 7),
    beforeCommit: builds.before.commitHash.slice(0, 7),
    builds: Object.fromEntries(Object.entries(builds).map(([v, b]) => [v, { dir: b.dir, built: b.built, buildS: b.buildS }])),
    store: "sqlite",
    synchronous: { current: synchronous("current"), before: synchronous("before"), v1: synchronous("v1") },
    order: ROUND_ORDER,
    v1UsPerCommand: us(v1Us),
    beforeUsPerCommand: us(beforeUs),
    currentUsPerCommand: us(currentUs),
    /** current / v1 service CPU per command. */
    ratio,
    target: `<= ${TARGET_TO_V1}`,
    /** current / before (main before the write path was narrowed) service CPU per command. */
    currentToBefore: toBefore,
    targetToBefore: `<= ${TARGET_TO_BEFORE}`,
    targetMet,
    currentCommandsPerSec: perSec(currentRate),
    beforeCommandsPerSec: perSec(beforeRate),
    v1CommandsPerSec: perSec(v1Rate),
    rawConsumePerSec: perSec(rawRate),
    /** Drain rate / raw JetStream consume rate, both measured inside this phase. */
    currentDrainToRawConsume: toRaw(currentRate, rawRate),
    beforeDrainToRawConsume: toRaw(beforeRate, rawRate),
    v1DrainToRawConsume: toRaw(v1Rate, rawRate),
    ...(earlierRaw === undefined
      ? {}
      : {
          /** The same against the rawCeiling scenario of this run (measured earlier, other moment). */
          rawCeilingConsumePerSec: earlierRaw,
          currentDrainToRawCeiling: toRaw(currentRate, earlierRaw),
          v1DrainToRawCeiling: toRaw(v1Rate, earlierRaw),
        }),
    rounds,
    rawConsume: raw,
  };
}

/** Runs `body` in its own Scope (its processes and folders undone when it ends), logging under `name`. */
export async function inScope(ctx: BenchContext, name: string, body: (sub: BenchContext) => Promise<void>): Promise<void> {
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

/**
 * Stops the service, queues `messages`, starts it again and measures from its first delivery until
 * the durable consumer is drained: commands/s and the service's CPU per command (/proc).
 */
export async function measureBacklog(
  ctx: BenchContext,
  service: TimerServiceProcess,
  client: BenchClient,
  pids: Record<string, number | undefined>,
  messages: readonly OutMessage[],
  serviceLabel: string,
  windowName = "ingest backlog",
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
  ctx.profileWindows.push({ label: serviceLabel, name: windowName, fromUs, toUs: monoUs() });
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
