/**
 * A Debian `redis-server` for the BullMQ peer: its own free port and temp folder, started and
 * stopped by the bench like nats-server. The configuration is given on the command line so the
 * JSON can report it as it was:
 *  - appendonly yes with `appendfsync` always (fsync before the reply, as our service commits
 *    every command with SQLite synchronous=FULL) or everysec (Redis's default when AOF is on);
 *  - no RDB snapshots (`save ""`): a fork in the middle of a measurement would cost both cores;
 *  - hz 100: blocked clients' timeouts, which wake BullMQ's worker for a delayed job, are checked
 *    hz times a second (10 by default, which alone would add up to 100 ms of lag).
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../../test/support/free-port.js";
import { sleep, type BenchContext } from "../harness.js";

export type AppendFsync = "always" | "everysec";

export interface RedisServer {
  readonly port: number;
  readonly pid: number | undefined;
  readonly config: Record<string, string>;
  readonly version: string;
}

const REDIS_SERVER_BIN = process.env.REDIS_SERVER_BIN ?? "redis-server";

/** Everything but appendfsync, which each run sets. */
export const REDIS_CONFIG: Readonly<Record<string, string>> = {
  appendonly: "yes",
  save: "",
  hz: "100",
  "maxmemory-policy": "noeviction",
};

export async function startRedis(ctx: BenchContext, appendfsync: AppendFsync): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "bench-redis-"));
  const config: Record<string, string> = { ...REDIS_CONFIG, appendfsync };
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--daemonize", "no", "--logfile", join(dir, "redis.log")];
  for (const [key, value] of Object.entries(config)) args.push(`--${key}`, value);
  const child = spawn(REDIS_SERVER_BIN, args, { stdio: ["ignore", "ignore", "pipe"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  ctx.scope.defer(async () => {
    await stop(child, exited);
    rmSync(dir, { recursive: true, force: true });
  });
  await waitForPing(port, child, 10_000);
  return { port, pid: child.pid, config, version: redisServerVersion() ?? "unknown" };
}

/** `v=7.0.15` from `redis-server --version`. */
export function redisServerVersion(): string | undefined {
  try {
    return /v=(\S+)/.exec(execFileSync(REDIS_SERVER_BIN, ["--version"], { encoding: "utf8" }))?.[1];
  } catch {
    return undefined;
  }
}

async function stop(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

async function waitForPing(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode} before answering PING`);
    if (await ping(port)) return;
    if (performance.now() > deadline) throw new Error(`redis-server did not answer PING within ${timeoutMs} ms`);
    await sleep(50);
  }
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: "127.0.0.1" });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.once("error", () => done(false));
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (data) => done(data.toString().startsWith("+PONG")));
    socket.setTimeout(1_000, () => done(false));
  });
}
