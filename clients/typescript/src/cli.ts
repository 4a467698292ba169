#!/usr/bin/env node
/**
 * `timer-client`: schedule, cancel and read timers from a shell in any project that installed
 * @timer-service/client. A thin layer over the client, so its checks and error texts are the
 * client's; the service's own CLI (`timer-service`) has more (watch, list, retry, plain-word times).
 */
import { parseArgs } from "node:util";
import { connectTimerClient, type TimerClient } from "./timer-client.js";
import { TimerClientError } from "./timer-client-error.js";
import type { Repeat } from "./types.js";

const USAGE = `timer-client — schedule, cancel and read timers of the timer service

Usage:
  timer-client schedule --tenant T --id ID (--at ISO-8601 | --in DURATION) [--data JSON]
                        [--correlation-id C] [--every DURATION | --cron 'MIN HOUR DOM MON DOW' [--tz ZONE]]
  timer-client cancel --tenant T --id ID
  timer-client get --tenant T --id ID

  ISO-8601 has an offset: 2026-12-01T09:00:00Z or 2026-12-01T10:00:00+01:00.
  DURATION is a number and a unit: 250ms, 10s, 5m, 2h, 1d.
  An id is used once: scheduling a fired id again is rejected TIMER_FINAL.

Options:
  --server URL   NATS server (default: NATS_URL or nats://127.0.0.1:4222)
  --prefix P     subject prefix of the service (default "timer")
`;

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
  server: { type: "string" },
  prefix: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

type Flags = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>["values"];

class UsageError extends Error {}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

function durationMs(flag: string, text: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (match === null) throw new UsageError(`--${flag} "${text}" is not a duration: a number and a unit, e.g. 250ms, 10s, 5m, 2h, 1d`);
  return Number(match[1]) * UNIT_MS[match[2]!]!;
}

function required(flags: Flags, name: "tenant" | "id"): string {
  const value = flags[name];
  if (value === undefined) throw new UsageError(`--${name} is required`);
  return value;
}

function repeatFrom(flags: Flags): Repeat | undefined {
  if (flags.every !== undefined && flags.cron !== undefined) throw new UsageError("give at most one of --every or --cron");
  if (flags.every !== undefined) return { everyMs: durationMs("every", flags.every) };
  if (flags.cron !== undefined) return flags.tz === undefined ? { cron: flags.cron } : { cron: flags.cron, timezone: flags.tz };
  if (flags.tz !== undefined) throw new UsageError("--tz needs --cron");
  return undefined;
}

function dueAtFrom(flags: Flags): Date | string {
  if ((flags.at === undefined) === (flags.in === undefined)) throw new UsageError("give exactly one of --at or --in");
  return flags.in !== undefined ? new Date(Date.now() + durationMs("in", flags.in)) : flags.at!;
}

async function run(command: string, flags: Flags, timers: TimerClient): Promise<void> {
  const id = required(flags, "id");
  if (command === "schedule") {
    let data: unknown;
    if (flags.data !== undefined) {
      try {
        data = JSON.parse(flags.data);
      } catch {
        throw new UsageError(`--data is not JSON: ${flags.data}`);
      }
    }
    const repeat = repeatFrom(flags);
    const correlationId = flags["correlation-id"];
    const sent = await timers.schedule({
      serviceCallId: id,
      dueAt: dueAtFrom(flags),
      ...(data === undefined ? {} : { data }),
      ...(repeat === undefined ? {} : { repeat }),
      ...(correlationId === undefined ? {} : { correlationId }),
    });
    process.stdout.write(`${JSON.stringify({ commandId: sent.commandId, subject: sent.subject, seq: sent.seq })}\n`);
  } else if (command === "cancel") {
    const sent = await timers.cancel(id);
    process.stdout.write(`${JSON.stringify({ commandId: sent.commandId, subject: sent.subject, seq: sent.seq })}\n`);
  } else {
    process.stdout.write(`${JSON.stringify(await timers.get(id))}\n`);
  }
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const [command, ...rest] = parsed.positionals;
  const flags = parsed.values;
  if (flags.help === true || command === undefined || command === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  if (!["schedule", "cancel", "get"].includes(command)) throw new UsageError(`unknown command "${command}"`);
  if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`);
  const tenantId = required(flags, "tenant");
  required(flags, "id");
  const servers = flags.server ?? process.env.NATS_URL ?? "nats://127.0.0.1:4222";
  const timers = await connectTimerClient({
    servers,
    tenantId,
    maxReconnectAttempts: 0,
    ...(flags.prefix ? { subjectPrefix: flags.prefix } : {}),
  });
  try {
    await run(command, flags, timers);
  } finally {
    await timers.close();
  }
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`timer-client: ${error.message}\n(timer-client --help shows the usage)\n`);
      process.exitCode = 2;
    } else if (error instanceof TimerClientError) {
      process.stderr.write(`timer-client: ${error.message}\n`);
      process.exitCode = error.code === "INVALID_INPUT" ? 2 : 1;
    } else {
      process.stderr.write(`timer-client: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    }
  },
);
