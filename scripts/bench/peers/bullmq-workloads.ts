/**
 * The three workloads of our ingest, burst and lowLoadLag scenarios, run against BullMQ: a timer
 * is a delayed job (`delay` = dueAt − timestamp, with the job's `timestamp` set explicitly so
 * that it is due exactly at dueAt), "stored" is the resolved `add`/`addBulk` (Redis replies after
 * its AOF write, fsynced first with appendfsync always), "fired" is the worker's processor being
 * called. Each workload gets a fresh redis-server. Counts, spreads, in-flight limits and the lag
 * plan (PRNG seed included) are those of our scenarios.
 */
import { Queue } from "bullmq";
import { CpuMeter, Scope, memoryOf, prng, round, scaled, sleep, summary, type BenchContext } from "../harness.js";
import { BullmqWorkerProcess } from "./bullmq-worker-process.js";
import { startRedis, type AppendFsync, type RedisServer } from "./redis-server.js";

/** Jobs in flight while adding: our ingest publishes with 2000 in flight. */
const IN_FLIGHT = 2_000;
const BULK_SIZE = 500;
const HORIZON_START_MS = 86_400_000;
const HORIZON_SPAN_MS = 30 * 86_400_000;

export interface PeerSettings {
  readonly appendfsync: AppendFsync;
  /** Jobs the worker processes at once. */
  readonly concurrency: number;
}

interface JobSpec {
  name: string;
  data: { i: number };
  opts: { delay: number; timestamp: number };
}

function delayedJob(i: number, dueAtMs: number, nowMs = Date.now()): JobSpec {
  return { name: "timer", data: { i }, opts: { timestamp: nowMs, delay: Math.max(0, dueAtMs - nowMs) } };
}

async function withRedis<T>(
  ctx: BenchContext,
  label: string,
  settings: PeerSettings,
  run: (redis: RedisServer, sub: BenchContext) => Promise<T>,
): Promise<T> {
  const scope = new Scope(label);
  const sub: BenchContext = { ...ctx, scope };
  try {
    const redis = await startRedis(sub, settings.appendfsync);
    return await run(redis, sub);
  } finally {
    await scope.close();
  }
}

function openQueue(sub: BenchContext, redis: RedisServer, name: string): Queue {
  const queue = new Queue(name, { connection: { host: "127.0.0.1", port: redis.port } });
  sub.scope.defer(() => queue.close());
  return queue;
}

/** Runs `task(i)` for i in [0, count) with at most `inFlight` pending at once. */
async function inLanes(count: number, inFlight: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, lane));
}

/** Jobs due 1–31 days ahead (never fire during the bench), like our ingest's commands. */
function farDue(i: number, n: number, base: number): number {
  return base + HORIZON_START_MS + Math.floor(((i * 7919) % n) * (HORIZON_SPAN_MS / n));
}

/**
 * ingest: N jobs stored, once with `add` (one job per call, IN_FLIGHT calls pending) and once with
 * `addBulk` (BULK_SIZE jobs per call, IN_FLIGHT jobs pending), each on a fresh Redis.
 */
export async function bullmqIngest(ctx: BenchContext, settings: PeerSettings): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 100_000);
  const measure = async (mode: "add" | "addBulk"): Promise<Record<string, unknown>> =>
    withRedis(ctx, `peers ingest ${mode}`, settings, async (redis, sub) => {
      const queue = openQueue(sub, redis, `ingest-${mode}`);
      await queue.waitUntilReady();
      const base = Date.now();
      const cpu = new CpuMeter({ redis: redis.pid });
      const t0 = performance.now();
      if (mode === "add") {
        await inLanes(n, IN_FLIGHT, (i) => {
          const job = delayedJob(i, farDue(i, n, base));
          return queue.add(job.name, job.data, job.opts);
        });
      } else {
        const batches = Math.ceil(n / BULK_SIZE);
        await inLanes(batches, Math.max(1, IN_FLIGHT / BULK_SIZE), (b) => {
          const from = b * BULK_SIZE;
          const to = Math.min(n, from + BULK_SIZE);
          return queue.addBulk(Array.from({ length: to - from }, (_, k) => delayedJob(from + k, farDue(from + k, n, base))));
        });
      }
      const seconds = (performance.now() - t0) / 1000;
      const cpuRead = cpu.read(n);
      const delayed = await queue.getDelayedCount();
      sub.log(`bullmq ${mode} (${settings.appendfsync}): ${n} jobs in ${seconds.toFixed(2)} s → ${Math.round(n / seconds)}/s`);
      return {
        jobs: n,
        delayedAfter: delayed,
        seconds: round(seconds, 2),
        jobsPerSec: Math.round(n / seconds),
        redisMemory: memoryOf(redis.pid),
        cpu: cpuRead,
      };
    });
  return { inFlight: IN_FLIGHT, bulkSize: BULK_SIZE, add: await measure("add"), addBulk: await measure("addBulk") };
}

/**
 * burst: N jobs due at one instant T, added (addBulk) before T with the worker already running;
 * the figure is the last fire − T. Invalid when the adding was not done 0.5 s before T.
 * `addPerSec` (the measured addBulk rate) sizes the margin before T.
 */
export async function bullmqBurst(
  ctx: BenchContext,
  settings: PeerSettings,
  addPerSec: number | undefined,
): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 100_000);
  return withRedis(ctx, "peers burst", settings, async (redis, sub) => {
    const queue = openQueue(sub, redis, "burst");
    await queue.waitUntilReady();
    const worker = await BullmqWorkerProcess.start(sub, redis.port, "burst", settings.concurrency);
    const rate = addPerSec !== undefined ? addPerSec * 0.5 : 5_000;
    const dueAtMs = Math.ceil((Date.now() + 3_000 + (n / rate) * 1000) / 1000) * 1000;
    sub.log(`bullmq burst (${settings.appendfsync}): ${n} jobs due at ${new Date(dueAtMs).toISOString()}`);
    const batches = Math.ceil(n / BULK_SIZE);
    await inLanes(batches, Math.max(1, IN_FLIGHT / BULK_SIZE), (b) => {
      const from = b * BULK_SIZE;
      const to = Math.min(n, from + BULK_SIZE);
      return queue.addBulk(Array.from({ length: to - from }, (_, k) => delayedJob(from + k, dueAtMs)));
    });
    const storedBeforeDueMs = dueAtMs - Date.now();
    const firedEarly = worker.firedCount;
    const valid = storedBeforeDueMs >= 500 && firedEarly === 0;
    sub.log(`all added ${(storedBeforeDueMs / 1000).toFixed(1)} s before the due instant${valid ? "" : " — TOO LATE, result invalid"}`);

    await sleep(dueAtMs - Date.now() - 50);
    const cpu = new CpuMeter({ worker: worker.pid, redis: redis.pid });
    await worker.waitFor(n, 600_000, "bullmq burst");
    const cpuRead = cpu.read(n);
    const fired = await worker.collect();
    const distinct = new Set(fired.indexes).size;
    const lastAtMs = fired.times.reduce((a, b) => (b > a ? b : a), Number.NEGATIVE_INFINITY);
    const firstAtMs = fired.times.reduce((a, b) => (b < a ? b : a), Number.POSITIVE_INFINITY);
    const seconds = (lastAtMs - dueAtMs) / 1000;
    sub.log(`bullmq burst (${settings.appendfsync}): last of ${n} fired ${seconds.toFixed(2)} s after the due instant`);
    return {
      jobs: n,
      valid,
      seconds: round(seconds, 2),
      firstFireAfterMs: firstAtMs - dueAtMs,
      firesPerSec: Math.round(n / Math.max(0.001, (lastAtMs - firstAtMs) / 1000)),
      storedBeforeDueS: round(storedBeforeDueMs / 1000, 1),
      duplicatesFired: fired.indexes.length - distinct,
      workerMemory: memoryOf(worker.pid),
      redisMemory: memoryOf(redis.pid),
      cpu: cpuRead,
    };
  });
}

/**
 * lowLoadLag: our plan exactly (500 timers over 10 s, each added 1–2 s before it is due, the same
 * PRNG seed); lag = fire time in the worker − dueAt.
 */
export async function bullmqLowLoadLag(ctx: BenchContext, settings: PeerSettings): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 500);
  const spreadMs = ctx.quick ? 3_000 : 10_000;
  return withRedis(ctx, "peers lowLoadLag", settings, async (redis, sub) => {
    const queue = openQueue(sub, redis, "lag");
    await queue.waitUntilReady();
    const worker = await BullmqWorkerProcess.start(sub, redis.port, "lag", settings.concurrency);
    const random = prng(0x1a6);
    const firstDueMs = Date.now() + 2_500;
    const plan = Array.from({ length: n }, (_, i) => {
      const dueAtMs = firstDueMs + Math.floor(((i + random()) * spreadMs) / n);
      return { i, dueAtMs, publishAtMs: dueAtMs - 1_000 - Math.floor(random() * 1_000) };
    }).sort((a, b) => a.publishAtMs - b.publishAtMs);
    const lastDueMs = Math.max(...plan.map((p) => p.dueAtMs));
    const cpu = new CpuMeter({ worker: worker.pid, redis: redis.pid });
    const adds: Promise<unknown>[] = [];
    let addErrors = 0;
    for (const p of plan) {
      await sleep(p.publishAtMs - Date.now());
      const job = delayedJob(p.i, p.dueAtMs);
      adds.push(queue.add(job.name, job.data, job.opts).catch(() => addErrors++));
    }
    await Promise.all(adds);
    await worker
      .waitFor(n, Math.max(1_000, lastDueMs - Date.now()) + 15_000, "bullmq lowLoadLag")
      .catch((error: unknown) => sub.log(String(error)));
    const cpuRead = cpu.read(n);
    const fired = await worker.collect();
    const dueByIndex = new Map(plan.map((p) => [p.i, p.dueAtMs]));
    const lags: number[] = [];
    fired.indexes.forEach((i, k) => {
      const dueAtMs = dueByIndex.get(i);
      if (dueAtMs !== undefined) lags.push(fired.times[k]! - dueAtMs);
    });
    const lag = summary(lags);
    sub.log(`bullmq lag (${settings.appendfsync}): p50 ${lag?.p50} ms, p99 ${lag?.p99} ms, max ${lag?.max} ms over ${lags.length} jobs`);
    return {
      jobs: n,
      spreadS: spreadMs / 1000,
      fired: lags.length,
      missing: n - new Set(fired.indexes).size,
      addErrors,
      p50Ms: lag?.p50,
      p99Ms: lag?.p99,
      maxMs: lag?.max,
      lagMs: lag,
      cpu: cpuRead,
    };
  });
}
