#!/usr/bin/env node
import { parseArgs } from "node:util";
import type { CommandOptions, Repeat, SendResult, TimerClient } from "@timer-service/client";
import { formatInstant } from "../domain/due-time.js";
import { isServiceCallId, isTenantId } from "../app/commands/command-text.js";
import { connectCli, prefixOf, withTimerClient } from "./cli-connection.js";
import { USAGE } from "./cli-usage.js";
import { QUERY_OPTIONS, runQueryCommand } from "./query-commands.js";
import { formatDuration, joinDurationWords, parseAt, parseDuration } from "./when.js";
import { RETRYABLE_STATES, retryMatching } from "./retry-command.js";
import { traceparentFrom } from "./traceparent.js";
import { UsageError } from "./usage-error.js";

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
  traceparent: { type: "string" },
  out: { type: "string" },
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
    case "export":
    case "import":
    case "backup": {
      const transfer = await import("./transfer-commands.js");
      const run = { export: transfer.exportCommand, import: transfer.importCommand, backup: transfer.backupCommand }[command];
      return run(flags);
    }
    case "get":
    case "list":
    case "stats":
      return runQueryCommand(command, flags, {
        prefix: prefixOf(flags),
        tenant: required(flags, "tenant"),
        id: () => required(flags, "id"),
        withClient: (use) => withTimerClient(flags, required(flags, "tenant"), use),
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

function dueAtFrom(flags: Flags, nowMs: number, repeat: Repeat | undefined): number {
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

/** `repeat` of `--every` or `--cron` (+ `--tz`, `--until`, `--max-occurrences`); the service checks the rest. */
function repeatFrom(flags: Flags, nowMs: number): Repeat | undefined {
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
  const bound = { ...(until === undefined ? {} : { until }), ...(maxOccurrences === undefined ? {} : { maxOccurrences }) };
  return everyMs !== undefined ? { everyMs, ...bound } : { cron: flags.cron!, timezone: flags.tz ?? "UTC", ...bound };
}

function maxLatenessFrom(flags: Flags): number | undefined {
  if (flags["max-lateness"] === undefined) return undefined;
  const ms = parseDuration(flags["max-lateness"]);
  if (ms === undefined) throw new UsageError(`--max-lateness "${flags["max-lateness"]}" is not a duration like 30s, 5m, 250ms`);
  return ms;
}

/** What every command of one run carries besides its payload: `--correlation-id`, `--traceparent`. */
function commandOptions(flags: Flags): CommandOptions {
  const correlationId = flags["correlation-id"];
  const traceparent = traceparentFrom(flags.traceparent);
  return {
    ...(correlationId === undefined ? {} : { correlationId }),
    ...(traceparent === undefined ? {} : { traceparent }),
  };
}

/** A failure of `@timer-service/client` (matched by name: the client is loaded lazily). */
function clientErrorCode(error: unknown): string | undefined {
  return error instanceof Error && error.name === "TimerClientError" ? (error as Error & { code: string }).code : undefined;
}

/**
 * Sends one command with the client and prints it: the envelope on stdout, where it went on
 * stderr. Input the client refuses is a usage error; a missing stream means no service has run.
 */
async function publish(flags: Flags, tenantId: string, send: (timers: TimerClient) => Promise<SendResult>): Promise<number> {
  let sent: SendResult;
  try {
    sent = await withTimerClient(flags, tenantId, send);
  } catch (error) {
    const code = clientErrorCode(error);
    if (code === "INVALID_INPUT") throw new UsageError((error as Error).message);
    // The client's NO_RESPONDERS text already says the service has not created its streams.
    if (code === "TIMEOUT")
      throw new Error(`${(error as Error).message} (is timer-service running? it creates the streams)`, { cause: error });
    throw error;
  }
  process.stderr.write(`published ${sent.command.type} to ${sent.subject} (stream ${sent.stream}, seq ${sent.seq})\n`);
  process.stdout.write(`${JSON.stringify(sent.command)}\n`);
  return 0;
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
  const options = commandOptions(flags);
  if (flags.at !== undefined && dueAtMs < nowMs) {
    process.stderr.write(
      `timer-service: warning: --at ${dueAt} is ${formatDuration(nowMs - dueAtMs)} in the past; the timer fires as soon as the service reads the command\n`,
    );
  }
  return publish(flags, tenantId, (timers) =>
    timers.schedule({
      serviceCallId,
      dueAt,
      ...(data === undefined ? {} : { data }),
      ...(repeat === undefined ? {} : { repeat }),
      ...(maxLatenessMs === undefined ? {} : { maxLatenessMs }),
      ...options,
    }),
  );
}

async function cancel(flags: Flags): Promise<number> {
  const tenantId = required(flags, "tenant");
  const serviceCallIdPrefix = flags["id-prefix"];
  const options = commandOptions(flags);
  if (serviceCallIdPrefix !== undefined) {
    if (flags.id !== undefined) throw new UsageError("give only one of --id or --id-prefix");
    if (!isServiceCallId(serviceCallIdPrefix)) throw new UsageError("--id-prefix must be 1..256 characters without control characters");
    return publish(flags, tenantId, (timers) => timers.cancelByPrefix(serviceCallIdPrefix, options));
  }
  const serviceCallId = required(flags, "id");
  return publish(flags, tenantId, (timers) => timers.cancel(serviceCallId, options));
}

/** `retry --id X` publishes one RetryTimer; `retry --state S [--id-prefix P]` one per matching timer (CONTRACT §14). */
async function retry(flags: Flags): Promise<number> {
  const tenantId = required(flags, "tenant");
  const state = flags.state;
  const options = commandOptions(flags);
  if (state === undefined) {
    if (flags["id-prefix"] !== undefined) throw new UsageError("--id-prefix needs --state");
    const serviceCallId = required(flags, "id");
    return publish(flags, tenantId, (timers) => timers.retry(serviceCallId, options));
  }
  if (flags.id !== undefined) throw new UsageError("give --id or --state, not both");
  const retryable = RETRYABLE_STATES.find((s) => s === state);
  if (retryable === undefined) throw new UsageError(`--state must be one of ${RETRYABLE_STATES.join(", ")}`);
  const serviceCallIdPrefix = flags["id-prefix"];
  if (serviceCallIdPrefix !== undefined && !isServiceCallId(serviceCallIdPrefix))
    throw new UsageError("--id-prefix must be 1..256 characters without control characters");
  const count = await withTimerClient(flags, tenantId, (timers) =>
    retryMatching(timers, { state: retryable, serviceCallIdPrefix, options }),
  );
  process.stdout.write(
    `${JSON.stringify({ tenantId, state, ...(serviceCallIdPrefix === undefined ? {} : { serviceCallIdPrefix }), retried: count })}\n`,
  );
  return 0;
}

/**
 * A live tail rather than the client's `consume`: every event kind (CommandRejected too), of one
 * tenant or all, nothing kept on the server and nothing acked.
 */
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
