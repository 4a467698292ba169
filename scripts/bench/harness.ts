/**
 * Shared harness of `npm run bench`: processes (nats-server, the service), a NATS client, bounded
 * publishing and waiting, Prometheus scraping, /proc CPU and memory readings, direct SQLite
 * population, and statistics. Every wait here has a deadline; every process and folder a scenario
 * creates is registered on its Scope, which the runner closes even when the scenario fails.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import { resolve } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { connect, createInbox, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { NatsServerProcess } from "../../test/support/nats-server.js";
import { TimerServiceProcess } from "../../test/support/timer-service-process.js";
import { TEST_DATABASE_URL, dropSchema, uniqueSchema } from "../../test/support/test-postgres.js";

export const REPO_ROOT = resolve(import.meta.dirname, "../..");

// ---------------------------------------------------------------------------------------------
// Logging (stderr only: stdout carries the one JSON line)

const benchStartedAt = performance.now();

export function log(message: string): void {
  const elapsed = ((performance.now() - benchStartedAt) / 1000).toFixed(1).padStart(7);
  process.stderr.write(`[${elapsed}s] ${message}\n`);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** Rounds for the JSON output. */
export function round(value: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

// ---------------------------------------------------------------------------------------------
// Cleanup

type Disposer = () => unknown;

/** Things to undo, undone in reverse order. Closing twice is harmless. */
export class Scope {
  private static readonly open = new Set<Scope>();
  private readonly disposers: Disposer[] = [];

  constructor(readonly name: string) {
    Scope.open.add(this);
  }

  defer(disposer: Disposer): void {
    this.disposers.push(disposer);
  }

  async close(): Promise<void> {
    Scope.open.delete(this);
    while (this.disposers.length > 0) {
      const disposer = this.disposers.pop()!;
      try {
        await withTimeout(Promise.resolve().then(disposer), 15_000, `cleanup of ${this.name}`);
      } catch (error) {
        log(`cleanup in ${this.name} failed: ${String(error)}`);
      }
    }
  }

  /** Closes every scope still open (signal handler, fatal error). */
  static async closeAll(): Promise<void> {
    for (const scope of [...Scope.open].reverse()) await scope.close();
  }
}

export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${Math.round(ms / 1000)} s`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Polls `check` every `intervalMs` until it returns a value other than undefined/false; returns
 * that value and when it was seen. Throws after `timeoutMs`.
 */
export async function waitUntil<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  options: { timeoutMs: number; intervalMs?: number; what: string },
): Promise<{ value: T; atMs: number; perfMs: number }> {
  const deadline = performance.now() + options.timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return { value, atMs: Date.now(), perfMs: performance.now() };
    } catch (error) {
      lastError = error;
    }
    if (performance.now() > deadline) {
      throw new Error(
        `timed out after ${Math.round(options.timeoutMs / 1000)} s waiting for ${options.what}${lastError === undefined ? "" : ` (last error: ${String(lastError)})`}`,
      );
    }
    await sleep(options.intervalMs ?? 50);
  }
}

// ---------------------------------------------------------------------------------------------
// Context handed to every scenario

export interface BenchOptions {
  readonly quick: boolean;
  /** Pending rows of the big poll scenario when --size 10m. */
  readonly size: "1m" | "10m";
  /** Folder for --cpu-prof output of the service, or undefined when not profiling. */
  readonly profileDir: string | undefined;
  /**
   * --store: the service's store (default sqlite). With postgres each service gets a new schema of
   * TIMER_TEST_DATABASE_URL's database (default the machine's Postgres), dropped afterwards.
   */
  readonly store: StoreKind;
  /** --instances: service processes sharing the consumer (postgres only); undefined when not given. */
  readonly instances: number | undefined;
  /** Whether --store was given (the `instances` scenario then measures that one configuration). */
  readonly storeGiven: boolean;
}

export type StoreKind = "sqlite" | "postgres";

/**
 * A measured phase of one service process, on CLOCK_MONOTONIC in µs — the clock V8 stamps its
 * CPU-profile samples with — so that --profile summarizes only the samples of that phase.
 */
export interface ProfileWindow {
  /** The service label (its --cpu-prof folder). */
  readonly label: string;
  readonly name: string;
  readonly fromUs: number;
  readonly toUs: number;
}

/** CLOCK_MONOTONIC in µs (process.hrtime uses it, like V8's profiler). */
export function monoUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

export interface BenchContext extends BenchOptions {
  readonly scope: Scope;
  /** 1, or 0.1 with --quick: multiply counts by it. */
  readonly scale: number;
  /** Results of the scenarios that ran before (burst uses the measured ingest rate). */
  readonly earlier: Readonly<Record<string, unknown>>;
  /** Measured phases, for --profile (shared by all scenarios). */
  readonly profileWindows: ProfileWindow[];
  log(message: string): void;
}

export function scaled(ctx: BenchContext, count: number): number {
  return Math.max(1, Math.round(count * ctx.scale));
}

// ---------------------------------------------------------------------------------------------
// Processes

export async function startNats(ctx: BenchContext): Promise<NatsServerProcess> {
  const nats = await NatsServerProcess.start();
  ctx.scope.defer(() => nats.dispose());
  return nats;
}

/** The pid of a NatsServerProcess (found by its unique store folder in /proc/<pid>/cmdline). */
export function natsPid(nats: NatsServerProcess): number | undefined {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmdline.includes(nats.storeDir) && cmdline.includes("nats-server")) return Number(entry);
    } catch {
      // the process ended meanwhile
    }
  }
  return undefined;
}

/**
 * Starts `node dist/main.js` with the default configuration (plus `env`) and a fresh database, as
 * a separate process, and waits until /readyz is 200. With --profile it runs under --cpu-prof; the
 * profile is written when the process exits gracefully (stopService). `entry` runs another build
 * instead of the repository's `dist/main.js` (an earlier version: see baseline.ts), with the same
 * environment.
 */
export async function startService(
  ctx: BenchContext,
  brokerUrl: string,
  label: string,
  env: Record<string, string> = {},
  entry?: string,
): Promise<TimerServiceProcess> {
  const main = entry ?? "dist/main.js";
  const command =
    ctx.profileDir === undefined
      ? [process.execPath, main]
      : [process.execPath, "--cpu-prof", `--cpu-prof-dir=${resolve(ctx.profileDir, label)}`, main];
  const storeEnv = ctx.store === "postgres" ? postgresEnv(uniqueSchema("bench")) : {};
  const service = await TimerServiceProcess.start(brokerUrl, { ...storeEnv, ...env }, { waitReady: false, command });
  ctx.scope.defer(() => service.dispose());
  await service.waitUntilReady(120_000);
  return service;
}

function postgresEnv(schema: string): Record<string, string> {
  return { TIMER_STORE: "postgres", TIMER_DATABASE_URL: TEST_DATABASE_URL, TIMER_DATABASE_SCHEMA: schema };
}

/**
 * `instances` service processes on one store, sharing the durable consumer: with postgres one new
 * schema for all of them (CONTRACT §6); with sqlite exactly one. Started one after the other (the
 * first creates streams and consumer), each ready before the next starts.
 */
export async function startServices(
  ctx: BenchContext,
  brokerUrl: string,
  label: string,
  store: StoreKind,
  instances: number,
  env: Record<string, string> = {},
): Promise<TimerServiceProcess[]> {
  if (store === "sqlite" && instances !== 1) throw new Error("SQLite runs one instance per consumer (CONTRACT §6)");
  const schema = store === "postgres" ? uniqueSchema("bench") : undefined;
  const storeEnv = schema === undefined ? { TIMER_STORE: "sqlite" } : postgresEnv(schema);
  const services: TimerServiceProcess[] = [];
  // Registered first, so undone last: the schema is dropped once every instance has stopped.
  if (schema !== undefined) ctx.scope.defer(() => dropSchema(schema));
  for (let i = 0; i < instances; i++) {
    const command =
      ctx.profileDir === undefined
        ? undefined
        : [process.execPath, "--cpu-prof", `--cpu-prof-dir=${resolve(ctx.profileDir, `${label}-${i}`)}`, "dist/main.js"];
    const service = await TimerServiceProcess.start(
      brokerUrl,
      { ...storeEnv, ...env },
      { waitReady: false, ...(command === undefined ? {} : { command }) },
    );
    // Not disposed: that would drop the shared schema under the other instances.
    ctx.scope.defer(async () => {
      await service.kill("SIGKILL").catch(() => undefined);
      rmSync(service.dataDir, { recursive: true, force: true });
    });
    await service.waitUntilReady(120_000);
    services.push(service);
  }
  return services;
}

/** SIGTERM (graceful: the CPU profile gets written), SIGKILL if it has not exited within `timeoutMs`. */
export async function stopService(service: TimerServiceProcess, timeoutMs = 12_000): Promise<void> {
  const pid = service.pid;
  if (pid === undefined) return;
  const timer = setTimeout(() => {
    log(`service ${pid} did not exit within ${timeoutMs} ms of SIGTERM; killing it`);
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }, timeoutMs);
  try {
    const result = await service.kill("SIGTERM");
    if (result.code !== 0) log(`service exited with ${result.code ?? result.signal} after SIGTERM`);
  } finally {
    clearTimeout(timer);
  }
}

/** Restarts a stopped service; returns wall times of spawn and of /readyz 200. */
export async function restartService(service: TimerServiceProcess): Promise<{ spawnedAtMs: number; readyAtMs: number; startupS: number }> {
  const spawnedAtMs = Date.now();
  const t0 = performance.now();
  await service.restart({ waitReady: false });
  await service.waitUntilReady(600_000);
  return { spawnedAtMs, readyAtMs: Date.now(), startupS: (performance.now() - t0) / 1000 };
}

// ---------------------------------------------------------------------------------------------
// NATS client of the bench (a separate process from the service)

export class BenchClient {
  private constructor(
    readonly nc: NatsConnection,
    readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
  ) {}

  static async connect(ctx: BenchContext, url: string): Promise<BenchClient> {
    const nc = await connect({ servers: url, name: "bench", maxReconnectAttempts: 20, reconnectTimeWait: 250 });
    const client = new BenchClient(nc, jetstream(nc, { timeout: 30_000 }), await jetstreamManager(nc, { timeout: 10_000 }));
    ctx.scope.defer(() => client.close());
    return client;
  }

  async close(): Promise<void> {
    if (this.nc.isClosed()) return;
    await withTimeout(this.nc.drain(), 5_000, "client drain").catch(() => this.nc.close());
  }

  /** Consumer state, for "has the service stored and acked everything". */
  async consumerBacklog(stream: string, consumer: string): Promise<{ pending: number; ackPending: number; delivered: number }> {
    const info = await this.jsm.consumers.info(stream, consumer);
    return { pending: info.num_pending, ackPending: info.num_ack_pending, delivered: info.delivered.stream_seq };
  }
}

export interface OutMessage {
  readonly subject: string;
  readonly data: Uint8Array;
}

/**
 * Publishes every message to JetStream with `inFlight` awaiting their stream acks at any time: a core
 * publish with a reply subject, the PubAcks collected on one wildcard inbox subscription. That is
 * what `js.publish()` does on the wire, without its per-call request bookkeeping (a promise, a
 * timer and a request object per message cost the bench ~70 µs of CPU per publish under load,
 * which would make the load generator the bottleneck). An error ack or no ack within 10 s
 * republishes the message (at most 3 times) — a duplicate command is harmless (same timestampMs →
 * ignored). Bounded by `timeoutMs`.
 */
export async function publishAll(
  nc: NatsConnection,
  messages: readonly OutMessage[],
  options: { inFlight: number; timeoutMs: number; label: string },
): Promise<{ firstAtMs: number; firstPerfMs: number; lastAckPerfMs: number; retries: number }> {
  const n = messages.length;
  const firstAtMs = Date.now();
  const firstPerfMs = performance.now();
  if (n === 0) return { firstAtMs, firstPerfMs, lastAckPerfMs: firstPerfMs, retries: 0 };
  const inbox = createInbox("_BENCH_ACK");
  const sentAt = new Float64Array(n).fill(-1); // -1: not sent, 0: acked
  const attempts = new Uint8Array(n);
  let next = 0;
  let acked = 0;
  let retries = 0;
  let failure: Error | undefined;
  let finish: (() => void) | undefined;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const send = (i: number): void => {
    sentAt[i] = performance.now();
    nc.publish(messages[i]!.subject, messages[i]!.data, { reply: `${inbox}.${i}` });
  };
  const retry = (i: number, why: string): void => {
    if (attempts[i]! >= 3) {
      failure ??= new Error(`${options.label}: message ${i} not accepted after ${attempts[i]! + 1} attempts (${why})`);
      finish?.();
      return;
    }
    attempts[i]!++;
    retries++;
    send(i);
  };
  const subscription = nc.subscribe(`${inbox}.*`, {
    callback: (error, ack) => {
      if (error !== null) return;
      const i = Number(ack.subject.slice(inbox.length + 1));
      if (!(i >= 0 && i < n) || sentAt[i]! <= 0) return; // unknown or already acked
      const status = ack.headers?.code ?? 0;
      if (status >= 300 || (ack.data.length > 0 && ack.string().includes('"error"'))) {
        retry(i, status >= 300 ? `status ${status}` : ack.string().slice(0, 200));
        return;
      }
      sentAt[i] = 0;
      acked++;
      if (acked === n) finish?.();
      else if (next < n) send(next++);
    },
  });
  const watchdog = setInterval(() => {
    const now = performance.now();
    if (now - firstPerfMs > options.timeoutMs) {
      failure ??= new Error(
        `${options.label}: publishing did not finish within ${Math.round(options.timeoutMs / 1000)} s (${acked}/${n} acked)`,
      );
      finish?.();
      return;
    }
    for (let i = 0; i < next; i++) if (sentAt[i]! > 0 && now - sentAt[i]! > 10_000) retry(i, "no ack within 10 s");
  }, 1_000);
  const progress = setInterval(() => log(`${options.label}: ${acked}/${n} acked`), 2_000);
  try {
    await nc.flush();
    while (next < Math.min(n, options.inFlight)) send(next++);
    await finished;
  } finally {
    clearInterval(watchdog);
    clearInterval(progress);
    subscription.unsubscribe();
  }
  if (failure !== undefined) throw failure;
  return { firstAtMs, firstPerfMs, lastAckPerfMs: performance.now(), retries };
}

/**
 * Waits until the durable consumer has nothing pending and nothing unacked: for the service that
 * means every command was stored and acked. Polls every `intervalMs`; returns when it saw that.
 */
export async function waitConsumerDrained(
  client: BenchClient,
  stream: string,
  consumer: string,
  options: { timeoutMs: number; intervalMs?: number; what: string; published?: () => boolean },
): Promise<{ atMs: number; perfMs: number }> {
  const { atMs, perfMs } = await waitUntil(
    async () => {
      if (options.published !== undefined && !options.published()) return false;
      const backlog = await client.consumerBacklog(stream, consumer);
      return backlog.pending === 0 && backlog.ackPending === 0;
    },
    { timeoutMs: options.timeoutMs, intervalMs: options.intervalMs ?? 10, what: options.what },
  );
  return { atMs, perfMs };
}

const encoder = new TextEncoder();

/** A ScheduleTimer envelope (pre-encoded: the bench does not JSON-encode while measuring). */
export function scheduleMessage(tenantId: string, serviceCallId: string, dueAtMs: number, timestampMs = Date.now()): OutMessage {
  const envelope = {
    id: `${serviceCallId}@${timestampMs}`,
    type: "ScheduleTimer",
    tenantId,
    timestampMs,
    payload: { tenantId, serviceCallId, dueAt: new Date(dueAtMs).toISOString() },
  };
  return { subject: `timer.commands.schedule.${tenantId}`, data: encoder.encode(JSON.stringify(envelope)) };
}

/** Zero-padded ids sort like the numbers (rows are then appended to the primary-key B-tree). */
export function callId(prefix: string, i: number): string {
  return `${prefix}-${String(i).padStart(8, "0")}`;
}

export const COMMANDS_STREAM = "TIMER_COMMANDS";
export const COMMANDS_CONSUMER = "timer-service";

/**
 * Counts distinct DueTimeReached (by Nats-Msg-Id) on a core subscription and remembers when each
 * arrived. `keepBodies` also parses every body (only for small counts).
 */
export class DueEventCollector {
  readonly seen = new Set<string>();
  readonly bodies: { receivedAtMs: number; body: Record<string, any> }[] = [];
  duplicates = 0;
  firstAtMs: number | undefined;
  lastAtMs: number | undefined;
  private waiter: { count: number; resolve: () => void } | undefined;
  private readonly subscription: Subscription;

  constructor(
    ctx: BenchContext,
    nc: NatsConnection,
    subject: string,
    private readonly keepBodies = false,
  ) {
    this.subscription = nc.subscribe(subject, {
      callback: (error, message) => {
        if (error !== null) return;
        const receivedAtMs = Date.now();
        const id = message.headers?.get("Nats-Msg-Id") || `${message.subject}#${message.sid}:${this.seen.size}`;
        if (this.seen.has(id)) {
          this.duplicates++;
          return;
        }
        this.seen.add(id);
        this.firstAtMs ??= receivedAtMs;
        this.lastAtMs = receivedAtMs;
        if (this.keepBodies) {
          try {
            this.bodies.push({ receivedAtMs, body: message.json() });
          } catch {
            // not JSON: counted, not timed
          }
        }
        if (this.waiter !== undefined && this.seen.size >= this.waiter.count) {
          this.waiter.resolve();
          this.waiter = undefined;
        }
      },
    });
    ctx.scope.defer(() => this.subscription.unsubscribe());
  }

  get count(): number {
    return this.seen.size;
  }

  /** Resolves once `count` distinct events arrived; rejects after `timeoutMs`. */
  async waitFor(count: number, timeoutMs: number, label: string): Promise<void> {
    if (this.seen.size >= count) return;
    const progress = setInterval(() => log(`${label}: ${this.seen.size}/${count} events received`), 2_000);
    try {
      await withTimeout(
        new Promise<void>((resolve) => (this.waiter = { count, resolve })),
        timeoutMs,
        `${label} (${this.seen.size}/${count} events)`,
      );
    } finally {
      clearInterval(progress);
      this.waiter = undefined;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Prometheus

export type Scrape = Map<string, number>;

export async function scrape(service: TimerServiceProcess): Promise<Scrape> {
  const response = await withTimeout(fetch(`${service.baseUrl}/metrics`), 10_000, "GET /metrics");
  const text = await response.text();
  const series: Scrape = new Map();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const space = line.lastIndexOf(" ");
    if (space <= 0) continue;
    const raw = line.slice(space + 1);
    const value = raw === "+Inf" ? Infinity : raw === "-Inf" ? -Infinity : Number(raw);
    series.set(line.slice(0, space), value);
  }
  return series;
}

/** Sum over all series of one metric name (any labels). */
export function metricSum(scrape: Scrape, name: string): number {
  let sum = 0;
  for (const [key, value] of scrape) if (key === name || key.startsWith(`${name}{`)) sum += value;
  return sum;
}

export interface Histogram {
  /** Cumulative counts by upper bound, ascending, +Inf last. */
  readonly buckets: readonly { le: number; count: number }[];
  readonly sum: number;
  readonly count: number;
}

export function histogramOf(scrape: Scrape, name: string): Histogram {
  const buckets: { le: number; count: number }[] = [];
  for (const [key, value] of scrape) {
    if (!key.startsWith(`${name}_bucket{`)) continue;
    const le = /le="([^"]+)"/.exec(key)?.[1];
    if (le === undefined) continue;
    buckets.push({ le: le === "+Inf" ? Infinity : Number(le), count: value });
  }
  buckets.sort((a, b) => a.le - b.le);
  return { buckets, sum: scrape.get(`${name}_sum`) ?? 0, count: scrape.get(`${name}_count`) ?? 0 };
}

/** The observations between two scrapes. */
export function histogramDelta(before: Histogram, after: Histogram): Histogram {
  return {
    buckets: after.buckets.map((b) => ({ le: b.le, count: b.count - (before.buckets.find((x) => x.le === b.le)?.count ?? 0) })),
    sum: after.sum - before.sum,
    count: after.count - before.count,
  };
}

/**
 * Quantile by linear interpolation inside the bucket (as Prometheus' histogram_quantile), plus
 * the bucket it falls in, since the interpolation is only as good as the bucket layout.
 */
export function histogramQuantile(h: Histogram, q: number): { value: number; bucketLow: number; bucketHigh: number } | undefined {
  if (h.count <= 0) return undefined;
  const rank = q * h.count;
  let previousLe = 0;
  let previousCount = 0;
  for (const bucket of h.buckets) {
    if (bucket.count >= rank) {
      if (bucket.le === Infinity) return { value: previousLe, bucketLow: previousLe, bucketHigh: Infinity };
      const inBucket = bucket.count - previousCount;
      const value = inBucket <= 0 ? bucket.le : previousLe + ((bucket.le - previousLe) * (rank - previousCount)) / inBucket;
      return { value, bucketLow: previousLe, bucketHigh: bucket.le };
    }
    previousLe = bucket.le;
    previousCount = bucket.count;
  }
  return undefined;
}

/** Fraction of observations ≤ x (interpolated inside its bucket). */
export function histogramFractionBelow(h: Histogram, x: number): number | undefined {
  if (h.count <= 0) return undefined;
  let previousLe = 0;
  let previousCount = 0;
  for (const bucket of h.buckets) {
    if (x <= bucket.le) {
      const within = bucket.le === Infinity ? 0 : ((x - previousLe) / (bucket.le - previousLe)) * (bucket.count - previousCount);
      return (previousCount + within) / h.count;
    }
    previousLe = bucket.le;
    previousCount = bucket.count;
  }
  return 1;
}

// ---------------------------------------------------------------------------------------------
// /proc readings

let clockTicks: number | undefined;
function clkTck(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** User + system CPU seconds of a process (all its threads) so far. */
export function cpuSecondsOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / clkTck();
  } catch {
    return undefined;
  }
}

/** VmRSS and VmHWM (peak RSS) of a process, in MB. */
export function memoryOf(pid: number | undefined): { rssMB: number; peakRssMB: number } | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
    return { rssMB: round(kb("VmRSS") / 1024), peakRssMB: round(kb("VmHWM") / 1024) };
  } catch {
    return undefined;
  }
}

/**
 * From /proc/<pid>/task/<tid>/schedstat: seconds on a CPU and seconds runnable but waiting for one
 * (run-queue wait), for the main thread (the JS event loop) and summed over all threads.
 */
export function schedOf(pid: number | undefined): { mainCpuS: number; mainWaitS: number; allWaitS: number } | undefined {
  if (pid === undefined) return undefined;
  try {
    const read = (tid: string): [number, number] => {
      const [cpu, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ").map(Number);
      return [(cpu ?? 0) / 1e9, (wait ?? 0) / 1e9];
    };
    const [mainCpuS, mainWaitS] = read(String(pid));
    let allWaitS = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        allWaitS += read(tid)[1];
      } catch {
        // thread ended
      }
    }
    return { mainCpuS, mainWaitS, allWaitS };
  } catch {
    return undefined;
  }
}

/** Bytes and calls of write(2)-family syscalls (files and sockets) and fsync-ish bytes to storage. */
export function ioOf(pid: number | undefined): { wchar: number; syscw: number; writeBytes: number } | undefined {
  if (pid === undefined) return undefined;
  try {
    const io = readFileSync(`/proc/${pid}/io`, "utf8");
    const field = (name: string): number => Number(new RegExp(`^${name}: (\\d+)`, "m").exec(io)?.[1] ?? NaN);
    return { wchar: field("wchar"), syscw: field("syscw"), writeBytes: field("write_bytes") };
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds of some processes (by name) and of the bench itself over a measured window, with
 * scheduler figures that tell a busy process from a starved one on a loaded machine:
 *  - <name>Busy: CPU seconds / wall seconds (all threads; 1.0 = one core);
 *  - <name>MainBusy: the main thread alone (for Node: the event loop, where SQLite runs too);
 *  - <name>MainStarved: share of the wall time the main thread was runnable but waiting for a CPU.
 *    MainBusy + MainStarved ≈ 1 means the thread wanted a core all the time (CPU-bound); the rest
 *    is time it waited on I/O or the network.
 *  - <name>WrittenMB / WrittenKBPerItem: bytes written by write syscalls (SQLite WAL and database
 *    pages, socket writes); <name>DiskWrittenMB: what reached the block device.
 */
export class CpuMeter {
  private readonly startCpu: Map<string, number | undefined>;
  private readonly startSched: Map<string, ReturnType<typeof schedOf>>;
  private readonly startIo: Map<string, ReturnType<typeof ioOf>>;
  private readonly startWall = performance.now();

  constructor(private readonly pids: Readonly<Record<string, number | undefined>>) {
    this.startCpu = new Map(Object.entries(pids).map(([name, pid]) => [name, cpuSecondsOf(pid)]));
    this.startCpu.set("bench", benchCpu());
    this.startSched = new Map(Object.entries(pids).map(([name, pid]) => [name, schedOf(pid)]));
    this.startSched.set("bench", schedOf(process.pid));
    this.startIo = new Map(Object.entries(pids).map(([name, pid]) => [name, ioOf(pid)]));
  }

  /** `{wallS, <name>CpuS, <name>Busy, <name>UsPerItem, <name>MainBusy, <name>MainStarved}` since construction. */
  read(perItems?: number): Record<string, number> {
    const wallS = (performance.now() - this.startWall) / 1000;
    const out: Record<string, number> = { wallS: round(wallS, 2) };
    for (const [name, before] of this.startCpu) {
      const pid = name === "bench" ? process.pid : this.pids[name];
      const now = name === "bench" ? benchCpu() : cpuSecondsOf(pid);
      if (before === undefined || now === undefined) continue;
      const cpuS = now - before;
      out[`${name}CpuS`] = round(cpuS, 2);
      out[`${name}Busy`] = round(cpuS / wallS, 2);
      if (perItems !== undefined && perItems > 0) out[`${name}UsPerItem`] = round((cpuS * 1e6) / perItems, 1);
      const s0 = this.startSched.get(name);
      const s1 = schedOf(pid);
      if (s0 !== undefined && s1 !== undefined) {
        out[`${name}MainBusy`] = round((s1.mainCpuS - s0.mainCpuS) / wallS, 2);
        out[`${name}MainStarved`] = round((s1.mainWaitS - s0.mainWaitS) / wallS, 2);
      }
      const io0 = this.startIo.get(name);
      const io1 = ioOf(pid);
      if (io0 !== undefined && io1 !== undefined) {
        // written through write(2)/pwrite(2) (files and sockets), and what reached the block device
        out[`${name}WrittenMB`] = round((io1.wchar - io0.wchar) / 1048576, 1);
        out[`${name}DiskWrittenMB`] = round((io1.writeBytes - io0.writeBytes) / 1048576, 1);
        if (perItems !== undefined && perItems > 0) out[`${name}WrittenKBPerItem`] = round((io1.wchar - io0.wchar) / 1024 / perItems, 2);
      }
    }
    return out;
  }
}

/**
 * Items per second the service could do if its CPU cost per item stayed the same and it had one
 * core to itself: a load-independent reading of a figure measured on a busy machine.
 */
export function serviceCoreBoundPerSec(cpu: Record<string, number>): number | undefined {
  const us = cpu.serviceUsPerItem;
  return us === undefined || us <= 0 ? undefined : Math.round(1e6 / us);
}

function benchCpu(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
}

// ---------------------------------------------------------------------------------------------
// Direct SQLite population (the service is stopped meanwhile)

/**
 * Inserts `count` Scheduled timers straight into the service's database, in big transactions.
 * The database must already exist (run the service once so that its migrations created the
 * table). The column list is read from the table, so added nullable columns are fine; a new
 * NOT NULL column without default stops the bench with a clear message instead of guessing.
 */
export function populateScheduled(
  dbPath: string,
  options: { count: number; tenantId: string; idPrefix: string; dueAtMs: (i: number) => number; label: string },
): { seconds: number; rowsPerSec: number; dbSizeMB: number } {
  const t0 = performance.now();
  const db = new Database(dbPath);
  try {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = OFF");
    db.pragma("cache_size = -262144"); // 256 MiB for the bulk load only
    const columns = db.prepare("PRAGMA table_info(timer_schedules)").all() as {
      name: string;
      notnull: number;
      dflt_value: unknown;
      pk: number;
    }[];
    if (columns.length === 0) throw new Error(`${dbPath} has no table timer_schedules: did the service migrate it?`);
    const nowMs = Date.now();
    const known: Record<string, (i: number) => unknown> = {
      tenant_id: () => options.tenantId,
      service_call_id: (i) => callId(options.idPrefix, i),
      state: () => "Scheduled",
      due_at: options.dueAtMs,
      data: () => null,
      correlation_id: () => null,
      command_ts: () => nowMs,
      registered_at: () => nowMs,
      reached_at: () => null,
      updated_at: () => nowMs,
    };
    const used = columns.filter((c) => c.name in known);
    const unknownRequired = columns.filter((c) => !(c.name in known) && c.notnull === 1 && c.dflt_value === null);
    if (unknownRequired.length > 0) {
      throw new Error(
        `timer_schedules has NOT NULL columns the bench does not know (${unknownRequired.map((c) => c.name).join(", ")}); update populateScheduled in scripts/bench/harness.ts`,
      );
    }
    const otherTables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[])
      .map((t) => t.name)
      .filter((name) => name !== "timer_schedules" && !name.startsWith("__drizzle") && !name.startsWith("sqlite_"));
    if (otherTables.length > 0)
      log(`${options.label}: note: the database also has tables ${otherTables.join(", ")}; the bench fills only timer_schedules`);
    const insert = db.prepare(
      `INSERT INTO timer_schedules (${used.map((c) => c.name).join(", ")}) VALUES (${used.map(() => "?").join(", ")})`,
    );
    const getters = used.map((c) => known[c.name]!);
    const insertRange = db.transaction((from: number, to: number) => {
      for (let i = from; i < to; i++) insert.run(...getters.map((get) => get(i)));
    });
    const chunk = 100_000;
    let lastLog = performance.now();
    for (let from = 0; from < options.count; from += chunk) {
      insertRange(from, Math.min(options.count, from + chunk));
      if (performance.now() - lastLog > 5_000) {
        log(`${options.label}: ${Math.min(options.count, from + chunk)}/${options.count} rows inserted`);
        lastLog = performance.now();
      }
    }
    db.pragma("wal_checkpoint(TRUNCATE)");
    const pages = db.pragma("page_count", { simple: true }) as number;
    const pageSize = db.pragma("page_size", { simple: true }) as number;
    const seconds = (performance.now() - t0) / 1000;
    return { seconds: round(seconds, 1), rowsPerSec: Math.round(options.count / seconds), dbSizeMB: round((pages * pageSize) / 1048576) };
  } finally {
    db.close();
  }
}

/** Stops the service, inserts rows into its database (SQLite file or Postgres schema); returns timings. */
export async function withRowsInserted(
  ctx: BenchContext,
  service: TimerServiceProcess,
  options: Parameters<typeof populateScheduled>[1],
): Promise<{ populate: ReturnType<typeof populateScheduled> }> {
  await stopService(service);
  const { TIMER_STORE, TIMER_DATABASE_URL, TIMER_DATABASE_SCHEMA, TIMER_DB_PATH } = service.env;
  const postgres = TIMER_STORE === "postgres";
  ctx.log(`inserting ${options.count} Scheduled rows into ${postgres ? `Postgres schema ${TIMER_DATABASE_SCHEMA}` : TIMER_DB_PATH}`);
  const populate = postgres
    ? await populatePostgresScheduled(TIMER_DATABASE_URL!, TIMER_DATABASE_SCHEMA!, options)
    : populateScheduled(TIMER_DB_PATH!, options);
  ctx.log(`inserted ${options.count} rows in ${populate.seconds} s (${populate.dbSizeMB} MB)`);
  return { populate };
}

/**
 * populateScheduled for a Postgres store: the same rows, in batches of 10,000 (`unnest` of arrays),
 * through the table's triggers like any write, then `VACUUM ANALYZE` (a table that has settled).
 */
async function populatePostgresScheduled(
  url: string,
  schema: string,
  options: Parameters<typeof populateScheduled>[1],
): Promise<ReturnType<typeof populateScheduled>> {
  const t0 = performance.now();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`SET search_path TO ${schema}`);
    const nowMs = Date.now();
    const batch = 10_000;
    let lastLog = performance.now();
    for (let from = 0; from < options.count; from += batch) {
      const to = Math.min(options.count, from + batch);
      const ids: string[] = [];
      const dues: number[] = [];
      for (let i = from; i < to; i++) {
        ids.push(callId(options.idPrefix, i));
        dues.push(options.dueAtMs(i));
      }
      await client.query(
        `INSERT INTO timer_schedules (tenant_id, service_call_id, state, due_at, command_ts, registered_at, updated_at)
         SELECT $1, id, 'Scheduled', due, $4, $4, $4 FROM unnest($2::text[], $3::bigint[]) AS u(id, due)`,
        [options.tenantId, ids, dues, nowMs],
      );
      if (performance.now() - lastLog > 5_000) {
        log(`${options.label}: ${to}/${options.count} rows inserted`);
        lastLog = performance.now();
      }
    }
    await client.query("VACUUM ANALYZE timer_schedules");
    const { rows } = await client.query<{ bytes: string }>("SELECT pg_total_relation_size('timer_schedules') AS bytes");
    const seconds = (performance.now() - t0) / 1000;
    return {
      seconds: round(seconds, 1),
      rowsPerSec: Math.round(options.count / seconds),
      dbSizeMB: round(Number(rows[0]!.bytes) / 1048576),
    };
  } finally {
    await client.end();
  }
}

// ---------------------------------------------------------------------------------------------
// Statistics

/** Nearest-rank percentile of unsorted numbers. */
export function percentile(values: readonly number[], q: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

export function summary(
  values: readonly number[],
): { p50: number; p90: number; p99: number; max: number; min: number; mean: number } | undefined {
  if (values.length === 0) return undefined;
  // reduce, not Math.min(...values): 600,000 recurring lags exceed the call stack as arguments.
  return {
    min: round(values.reduce((a, b) => (b < a ? b : a), Number.POSITIVE_INFINITY)),
    p50: round(percentile(values, 0.5)!),
    p90: round(percentile(values, 0.9)!),
    p99: round(percentile(values, 0.99)!),
    max: round(values.reduce((a, b) => (b > a ? b : a), Number.NEGATIVE_INFINITY)),
    mean: round(values.reduce((a, b) => a + b, 0) / values.length),
  };
}

/** A small deterministic PRNG (mulberry32): the same timer layout on every run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------
// The machine

export function machineInfo(): Record<string, unknown> {
  const natsBin = process.env.NATS_SERVER_BIN ?? "nats-server";
  const run = (bin: string, args: string[]): string | undefined => {
    const result = spawnSync(bin, args, { encoding: "utf8", cwd: REPO_ROOT, timeout: 10_000 });
    return result.status === 0 ? result.stdout.trim() : undefined;
  };
  let sqlite: string | undefined;
  try {
    const db = new Database(":memory:");
    sqlite = (db.prepare("SELECT sqlite_version() AS v").get() as { v: string }).v;
    db.close();
  } catch {
    sqlite = undefined;
  }
  const dirty = run("git", ["status", "--porcelain", "--", "src", "drizzle"]);
  return {
    nproc: os.availableParallelism(),
    cpu: os.cpus()[0]?.model,
    memMB: Math.round(os.totalmem() / 1048576),
    kernel: os.release(),
    node: process.version,
    natsServer: run(natsBin, ["--version"]),
    sqlite,
    gitCommit: run("git", ["rev-parse", "--short", "HEAD"]),
    srcUncommittedChanges: dirty === undefined ? undefined : dirty.split("\n").filter((l) => l !== "").length,
  };
}

export function loadAverage(): number[] {
  return os.loadavg().map((x) => round(x, 2));
}
