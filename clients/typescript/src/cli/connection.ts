import { readFileSync } from "node:fs";
import { connect, credsAuthenticator, type NatsConnection, type NodeConnectionOptions } from "@nats-io/transport-node";
import { connectTimerClient, type TimerClient } from "../timer-client.js";
import { UsageError } from "./usage-error.js";

/** The flags that say where the broker and the service's subjects are. */
export interface ConnectionFlags {
  readonly server?: string | undefined;
  readonly prefix?: string | undefined;
}

export const DEFAULT_SERVER = "nats://127.0.0.1:4222";

/** `--server`, else NATS_URL (the nats tools' variable), else TIMER_BROKER_URL (the service's), else the local default. */
export function serversOf(flags: ConnectionFlags, env: NodeJS.ProcessEnv = process.env): string[] {
  const text = [flags.server, env.NATS_URL, env.TIMER_BROKER_URL].find((v) => v !== undefined && v.trim() !== "") ?? DEFAULT_SERVER;
  const servers = text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  for (const server of servers) {
    if (!/^(nats|tls):\/\/[^\s/]+\/?$/.test(server) && !/^[^\s:/]+:\d+$/.test(server))
      throw new UsageError(`server "${server}" is not a NATS URL: give one like ${DEFAULT_SERVER} (several comma-separated)`);
  }
  return servers;
}

export function prefixOf(flags: ConnectionFlags): string {
  const fromEnv = process.env.TIMER_SUBJECT_PREFIX;
  const prefix = flags.prefix ?? (fromEnv === undefined || fromEnv === "" ? "timer" : fromEnv);
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(prefix))
    throw new UsageError(`--prefix "${prefix}" is not a subject prefix: 1 to 32 letters, digits, "_" or "-", e.g. timer`);
  return prefix;
}

/** Credentials from NATS_CREDS / NATS_USER + NATS_PASSWORD / NATS_TOKEN, or the service's TIMER_NATS_* names. */
function credentials(env: NodeJS.ProcessEnv): Partial<NodeConnectionOptions> {
  const pick = (...names: string[]) => names.map((n) => env[n]).find((v) => v !== undefined && v !== "");
  const credsFile = pick("NATS_CREDS", "TIMER_NATS_CREDS_FILE");
  if (credsFile !== undefined) {
    let creds: Uint8Array;
    try {
      creds = readFileSync(credsFile);
    } catch (error) {
      throw new UsageError(`NATS_CREDS: cannot read "${credsFile}": ${(error as Error).message}`);
    }
    return { authenticator: credsAuthenticator(creds) };
  }
  const token = pick("NATS_TOKEN", "TIMER_NATS_TOKEN");
  if (token !== undefined) return { token };
  const user = pick("NATS_USER", "TIMER_NATS_USER");
  return user === undefined ? {} : { user, pass: pick("NATS_PASSWORD", "TIMER_NATS_PASSWORD") ?? "" };
}

/** A connection for one command: no reconnecting, so a server that is down fails at once, by its URL. */
export async function connectCli(flags: ConnectionFlags, options: { reconnect?: boolean } = {}): Promise<NatsConnection> {
  const servers = serversOf(flags);
  const auth = credentials(process.env);
  try {
    return await connect({
      servers,
      name: "timer-client",
      ...auth,
      ...(options.reconnect === true ? { maxReconnectAttempts: -1 } : { maxReconnectAttempts: 0 }),
    });
  } catch (error) {
    throw new Error(`connecting to NATS at ${servers.join(", ")}: ${(error as Error).message}`, { cause: error });
  }
}

/** Runs `use` with a client for `tenantId`, then closes both. */
export async function withTimerClient<T>(
  flags: ConnectionFlags,
  tenantId: string,
  use: (timers: TimerClient) => Promise<T>,
  confirmTimeoutMs?: number,
): Promise<T> {
  const subjectPrefix = prefixOf(flags);
  const nc = await connectCli(flags);
  try {
    const timers = await connectTimerClient({
      nc,
      tenantId,
      subjectPrefix,
      timeoutMs: 10_000,
      ...(confirmTimeoutMs === undefined ? {} : { confirmTimeoutMs }),
    });
    try {
      return await use(timers);
    } finally {
      await timers.close();
    }
  } finally {
    await nc.drain().catch(() => undefined);
  }
}
