#!/usr/bin/env node
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import type { NatsConnection } from "@nats-io/transport-node";
import { ConfigError, checkCredentialFiles, loadBrokerUrls, loadNatsCredentials, loadSubjectPrefix } from "../config/config.js";
import { formatInstant } from "../domain/due-time.js";
import { isServiceCallId, isTenantId } from "../app/commands/command-text.js";
import { USAGE } from "./cli-usage.js";
import { QUERY_OPTIONS, runQueryCommand } from "./query-commands.js";
import { formatDuration, joinDurationWords, parseAt, parseDuration } from "./when.js";
import { RETRYABLE_STATES, retryMatching } from "./retry-command.js";

/** A wrong flag or value: printed with a hint, exit code 2. */
class UsageError extends Error {
  override readonly name = "UsageError";
}

const OPTIONS = {
  tenant: { type: "string" },
  id: { type: "string" },
  at: { type: "string" },
  in: { type: "string" },
  data: { type: "string" },
  "correlation-id": { type: "string" },
  every: { type: "string" },
  cron: { type: "string" },
  tz: { type: "string" },
  until: { type: "string" },
  "max-occurrences": { type: "string" },
  "max-lateness": { type: "string" },
  server: { type: "string" },
  prefix: { type: "string" },
  help: { type: "boolean", short: "h" },
  ...QUERY_OPTIONS,
} as const;

type Flags = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>["values"];

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: joinDurationWords(argv), options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const [command, ...rest] = parsed.positionals;
  const flags = parsed.values;
  if (flags.help === true || command === undefined || command === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`);
  switch (command) {
    case "serve": {
      const { runTimerService } = await import("../composition/run-timer-service.js");
      await runTimerService();
      return -1; // keeps running; the service exits the process itself
    }
    case "schedule":
      return schedule(flags);
    case "cancel":
      return cancel(flags);
    case "retry":
      return retry(flags);
    case "watch":
      return watch(flags);
    case "get":
    case "list":
    case "stats":
      return runQueryCommand(command, flags, {
        prefix: prefixOf(flags),
        tenant: required(flags, "tenant"),
        id: () => required(flags, "id"),
        withConnection: (use) => withConnection(flags, use),
        usageError: (message) => new UsageError(message),
        sinceMs: (text) => {
          const nowMs = Date.now();
          const ago = parseDuration(text);
          return ago === undefined ? parseAt(text, nowMs) : nowMs - ago;
        },
        out: (line) => process.stdout.write(`${line}\n`),
        err: (line) => process.stderr.write(`${line}\n`),
      });
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

function required(flags: Flags, name: "tenant" | "id"): string {
  const value = flags[name];
  if (value === undefined) throw new UsageError(`--${name} is required`);
  if (name === "tenant" && !isTenantId(value)) throw new UsageError(`--tenant "${value}" must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`);
  if (name === "id" && !isServiceCallId(value)) throw new UsageError("--id must be 1..256 characters without control characters");
  return value;
}

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

function prefixOf(flags: Flags): string {
  return fromConfig("prefix", () => loadSubjectPrefix(flags.prefix === undefined ? process.env : { TIMER_SUBJECT_PREFIX: flags.prefix }));
}

/** The NATS client loads only here, so `serve` validates its configuration before loading it (and the service's own copy). */
async function connectCli(flags: Flags): Promise<NatsConnection> {
  const servers = fromConfig("server", () => loadBrokerUrls(flags.server === undefined ? process.env : { TIMER_BROKER_URL: flags.server }));
  const credentials = loadNatsCredentials(process.env);
  fromConfig(undefined, () => checkCredentialFiles(credentials));
  const [{ connect }, { natsConnectionOptions }] = await Promise.all([
    import("@nats-io/transport-node"),
    import("../adapters/nats/nats-connection.js"),
  ]);
  return connect({
    ...natsConnectionOptions(servers, credentials),
    name: "timer-service-cli",
    waitOnFirstConnect: false,
    maxReconnectAttempts: 10,
  });
}

async function withConnection<T>(flags: Flags, use: (nc: NatsConnection) => Promise<T>): Promise<T> {
  const nc = await connectCli(flags);
  try {
    return await use(nc);
  } finally {
    await nc.drain().catch(() => undefined);
  }
}

function dueAtFrom(flags: Flags, nowMs: number, repeat: RepeatFlags | undefined): number {
  if (flags.at !== undefined && flags.in !== undefined) throw new UsageError("give exactly one of --at or --in");
  if (flags.at === undefined && flags.in === undefined) {
    if (repeat === undefined) throw new UsageError("give exactly one of --at or --in");
    // A series without a start: --every starts one interval from now, --cron at its next time.
    return nowMs + (repeat.everyMs ?? 0);
  }
  if (flags.in !== undefined) {
    const ms = parseDuration(flags.in);
    if (ms === undefined) throw new UsageError(`--in "${flags.in}" is not a duration like 10s, "10 seconds", "5 minutes", 1h30m, "2 days"`);
    return nowMs + ms;
  }
  const at = parseAt(flags.at!, nowMs);
  if (at === undefined) throw new UsageError(`--at "${flags.at}" is neither ISO 8601 with an offset nor a time like "tomorrow 9am"`);
  return at;
}

function dataFrom(flags: Flags): unknown {
  if (flags.data === undefined) return undefined;
  try {
    return JSON.parse(flags.data);
  } catch {
    throw new UsageError(`--data is not JSON: ${flags.data}`);
  }
}

interface RepeatFlags {
  readonly everyMs?: number;
  readonly cron?: string;
  readonly timezone?: string;
  readonly until?: string;
  readonly maxOccurrences?: number;
}

/** `repeat` of `--every` or `--cron` (+ `--tz`, `--until`, `--max-occurrences`); the service checks the rest. */
function repeatFrom(flags: Flags, nowMs: number): RepeatFlags | undefined {
  const bounds = flags.until !== undefined || flags["max-occurrences"] !== undefined;
  if (flags.every === undefined && flags.cron === undefined) {
    if (flags.tz !== undefined || bounds) throw new UsageError("--tz, --until and --max-occurrences need --every or --cron");
    return undefined;
  }
  if (flags.every !== undefined && flags.cron !== undefined) throw new UsageError("give only one of --every or --cron");
  if (flags.tz !== undefined && flags.cron === undefined) throw new UsageError("--tz needs --cron");
  let everyMs: number | undefined;
  if (flags.every !== undefined) {
    everyMs = parseDuration(flags.every);
    if (everyMs === undefined || everyMs < 1_000)
      throw new UsageError(`--every "${flags.every}" is not a duration of at least 1s, like 30s, 5m, "1 hour"`);
  }
  let until: string | undefined;
  if (flags.until !== undefined) {
    const untilMs = parseAt(flags.until, nowMs);
    if (untilMs === undefined)
      throw new UsageError(`--until "${flags.until}" is neither ISO 8601 with an offset nor a time like "friday 18:00"`);
    until = formatInstant(untilMs);
  }
  let maxOccurrences: number | undefined;
  if (flags["max-occurrences"] !== undefined) {
    maxOccurrences = Number(flags["max-occurrences"]);
    if (!Number.isSafeInteger(maxOccurrences) || maxOccurrences < 1) throw new UsageError("--max-occurrences must be a whole number ≥ 1");
  }
  return {
    ...(everyMs === undefined ? {} : { everyMs }),
    ...(flags.cron === undefined ? {} : { cron: flags.cron, timezone: flags.tz ?? "UTC" }),
    ...(until === undefined ? {} : { until }),
    ...(maxOccurrences === undefined ? {} : { maxOccurrences }),
  };
}

function maxLatenessFrom(flags: Flags): number | undefined {
  if (flags["max-lateness"] === undefined) return undefined;
  const ms = parseDuration(flags["max-lateness"]);
  if (ms === undefined) throw new UsageError(`--max-lateness "${flags["max-lateness"]}" is not a duration like 30s, 5m, 250ms`);
  return ms;
}

const COMMAND_TYPES = {
  schedule: "ScheduleTimer",
  cancel: "CancelTimer",
  cancelprefix: "CancelTimersByPrefix",
  retry: "RetryTimer",
} as const;

async function publishCommand(
  flags: Flags,
  kind: keyof typeof COMMAND_TYPES,
  payload: Record<string, unknown>,
  tenantId: string,
): Promise<Record<string, unknown>> {
  const correlationId = flags["correlation-id"];
  const envelope = {
    id: randomUUID(),
    type: COMMAND_TYPES[kind],
    tenantId,
    ...(correlationId === undefined ? {} : { correlationId }),
    timestampMs: Date.now(),
    payload,
  };
  const subject = `${prefixOf(flags)}.commands.${kind}.${tenantId}`;
  await withConnection(flags, async (nc) => {
    const { jetstream } = await import("@nats-io/jetstream");
    const ack = await jetstream(nc).publish(subject, JSON.stringify(envelope));
    process.stderr.write(`published ${envelope.type} to ${subject} (stream ${ack.stream}, seq ${ack.seq})\n`);
  });
  return envelope;
}

async function schedule(flags: Flags): Promise<number> {
  const tenantId = required(flags, "tenant");
  const serviceCallId = required(flags, "id");
  const nowMs = Date.now();
  const repeat = repeatFrom(flags, nowMs);
  const maxLatenessMs = maxLatenessFrom(flags);
  const dueAtMs = dueAtFrom(flags, nowMs, repeat);
  const dueAt = formatInstant(dueAtMs);
  const data = dataFrom(flags);
  if (flags.at !== undefined && dueAtMs < nowMs) {
    process.stderr.write(
      `timer-service: warning: --at ${dueAt} is ${formatDuration(nowMs - dueAtMs)} in the past; the timer fires as soon as the service reads the command\n`,
    );
  }
  const payload = {
    tenantId,
    serviceCallId,
    dueAt,
    ...(data === undefined ? {} : { data }),
    ...(repeat === undefined ? {} : { repeat }),
    ...(maxLatenessMs === undefined ? {} : { maxLatenessMs }),
  };
  const envelope = await publishCommand(flags, "schedule", payload, tenantId);
  process.stdout.write(`${JSON.stringify(envelope)}\n`);
  return 0;
}

async function cancel(flags: Flags): Promise<number> {
  const tenantId = required(flags, "tenant");
  const serviceCallIdPrefix = flags["id-prefix"];
  if (serviceCallIdPrefix !== undefined) {
    if (flags.id !== undefined) throw new UsageError("give only one of --id or --id-prefix");
    if (!isServiceCallId(serviceCallIdPrefix)) throw new UsageError("--id-prefix must be 1..256 characters without control characters");
    const envelope = await publishCommand(flags, "cancelprefix", { tenantId, serviceCallIdPrefix }, tenantId);
    process.stdout.write(`${JSON.stringify(envelope)}\n`);
    return 0;
  }
  const serviceCallId = required(flags, "id");
  const envelope = await publishCommand(flags, "cancel", { tenantId, serviceCallId }, tenantId);
  process.stdout.write(`${JSON.stringify(envelope)}\n`);
  return 0;
}

/** `retry --id X` publishes one RetryTimer; `retry --state S [--id-prefix P]` one per matching timer (CONTRACT §14). */
async function retry(flags: Flags): Promise<number> {
  const tenantId = required(flags, "tenant");
  const state = flags.state;
  if (state === undefined) {
    if (flags["id-prefix"] !== undefined) throw new UsageError("--id-prefix needs --state");
    const envelope = await publishCommand(flags, "retry", { tenantId, serviceCallId: required(flags, "id") }, tenantId);
    process.stdout.write(`${JSON.stringify(envelope)}\n`);
    return 0;
  }
  if (flags.id !== undefined) throw new UsageError("give --id or --state, not both");
  if (!(RETRYABLE_STATES as readonly string[]).includes(state))
    throw new UsageError(`--state must be one of ${RETRYABLE_STATES.join(", ")}`);
  const serviceCallIdPrefix = flags["id-prefix"];
  if (serviceCallIdPrefix !== undefined && !isServiceCallId(serviceCallIdPrefix))
    throw new UsageError("--id-prefix must be 1..256 characters without control characters");
  const count = await withConnection(flags, (nc) => retryMatching(nc, { prefix: prefixOf(flags), tenantId, state, serviceCallIdPrefix }));
  process.stdout.write(
    `${JSON.stringify({ tenantId, state, ...(serviceCallIdPrefix === undefined ? {} : { serviceCallIdPrefix }), retried: count })}\n`,
  );
  return 0;
}

async function watch(flags: Flags): Promise<number> {
  const tenant = flags.tenant === undefined ? "*" : required(flags, "tenant");
  const prefix = prefixOf(flags);
  const nc = await connectCli(flags);
  const subscriptions = ["due", "missed", "rejected"].map((kind) => nc.subscribe(`${prefix}.events.${kind}.${tenant}`));
  const stop = (): void => void nc.drain().then(() => process.exit(0));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  await nc.flush();
  process.stderr.write(`watching ${prefix}.events.{due,missed,rejected}.${tenant} (Ctrl-C to stop)\n`);
  await Promise.all(
    subscriptions.map(async (subscription) => {
      for await (const message of subscription) process.stdout.write(`${message.string()}\n`);
    }),
  );
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`timer-service: ${error.message}\nRun "timer-service --help" for usage.\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`timer-service: ${(error as Error).message ?? String(error)}\n`);
      process.exitCode = 1;
    }
  },
);
