import type { NatsConnection } from "@nats-io/transport-node";
import type { TimerClient } from "@timer-service/client";
import { ConfigError, checkCredentialFiles, loadBrokerUrls, loadNatsCredentials, loadSubjectPrefix } from "../config/config.js";
import { UsageError } from "./usage-error.js";

/** The flags that say where the service's broker and subjects are. */
export interface ConnectionFlags {
  readonly server?: string | undefined;
  readonly prefix?: string | undefined;
}

/** How long a publish ack or a query reply may take. */
const TIMEOUT_MS = 10_000;

/**
 * Flags win over the service's variables; both are checked by the service's own config rules. A
 * ConfigError becomes a usage error (exit 2), naming `--flag` when the value may come from one.
 */
function fromConfig<T>(flag: string | undefined, load: () => T): T {
  try {
    return load();
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(flag === undefined ? error.message : `--${flag}: ${error.message}`);
    throw error;
  }
}

export function prefixOf(flags: ConnectionFlags): string {
  return fromConfig("prefix", () => loadSubjectPrefix(flags.prefix === undefined ? process.env : { TIMER_SUBJECT_PREFIX: flags.prefix }));
}

/**
 * The NATS client loads only here, so `serve` validates its configuration before loading it (and
 * the service's own copy). Credentials come from the service's TIMER_NATS_* variables.
 */
export async function connectCli(flags: ConnectionFlags): Promise<NatsConnection> {
  const servers = fromConfig("server", () => loadBrokerUrls(flags.server === undefined ? process.env : { TIMER_BROKER_URL: flags.server }));
  const credentials = loadNatsCredentials(process.env);
  fromConfig(undefined, () => checkCredentialFiles(credentials));
  const [{ connect }, { natsConnectionOptions }] = await Promise.all([
    import("@nats-io/transport-node"),
    import("../adapters/nats/nats-connection.js"),
  ]);
  try {
    return await connect({
      ...natsConnectionOptions(servers, credentials),
      name: "timer-service-cli",
      waitOnFirstConnect: false,
      maxReconnectAttempts: 10,
    });
  } catch (error) {
    // The client library's wording, so both CLIs say which server did not answer.
    throw new Error(`connecting to NATS at ${servers.join(", ")}: ${(error as Error).message}`, { cause: error });
  }
}

/** Runs `use` with a `@timer-service/client` for `tenantId` on the CLI's connection, then closes both. */
export async function withTimerClient<T>(flags: ConnectionFlags, tenantId: string, use: (timers: TimerClient) => Promise<T>): Promise<T> {
  const subjectPrefix = prefixOf(flags);
  const nc = await connectCli(flags);
  try {
    const { connectTimerClient } = await import("@timer-service/client");
    const timers = await connectTimerClient({ nc, tenantId, subjectPrefix, timeoutMs: TIMEOUT_MS });
    try {
      return await use(timers);
    } finally {
      await timers.close();
    }
  } finally {
    await nc.drain().catch(() => undefined);
  }
}
