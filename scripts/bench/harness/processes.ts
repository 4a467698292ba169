import { readFileSync, readdirSync, rmSync } from "node:fs";
import { resolve } from "node:path";
import { NatsServerProcess } from "../../../test/support/nats-server.js";
import { TimerServiceProcess } from "../../../test/support/timer-service-process.js";
import { TEST_DATABASE_URL, dropSchema, uniqueSchema } from "../../../test/support/test-postgres.js";
import type { BenchContext, StoreKind } from "./context.js";
import { log } from "./log.js";

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
