import type { TimerClient } from "../timer-client.js";
import type { CommandOptions, ConfirmedResult, Repeat, SendResult } from "../types.js";
import { withTimerClient } from "./connection.js";
import { formatDuration, parseDuration } from "./durations.js";
import { instantFlag } from "./instant-flag.js";
import type { Flags } from "./options.js";
import { traceparentFrom } from "./traceparent.js";
import { UsageError } from "./usage-error.js";

/** Where a command's result is printed: one JSON line on stdout, a sentence for a person on stderr. */
export interface Output {
  out(line: string): void;
  err(line: string): void;
}

export function required(flags: Flags, name: "tenant" | "id"): string {
  const value = flags[name];
  if (value === undefined) throw new UsageError(`--${name} is required`);
  return value;
}

function durationFlag(flags: Flags, name: "in" | "every" | "max-lateness" | "confirm-timeout", example: string): number | undefined {
  const text = flags[name];
  if (text === undefined) return undefined;
  const ms = parseDuration(text);
  if (ms === undefined) throw new UsageError(`--${name} "${text}" is not a duration: a number and a unit, e.g. ${example}`);
  return ms;
}

function dataFrom(flags: Flags): unknown {
  if (flags.data === undefined) return undefined;
  try {
    return JSON.parse(flags.data);
  } catch {
    throw new UsageError(`--data is not JSON: ${flags.data} (e.g. --data '{"orderId":42}')`);
  }
}

/** `repeat` of `--every` or `--cron` (+ `--tz`, `--until`, `--max-occurrences`); the client checks the rest. */
function repeatFrom(flags: Flags): Repeat | undefined {
  const bounds = flags.until !== undefined || flags["max-occurrences"] !== undefined;
  if (flags.every === undefined && flags.cron === undefined) {
    if (flags.tz !== undefined || bounds) throw new UsageError("--tz, --until and --max-occurrences need --every or --cron");
    return undefined;
  }
  if (flags.every !== undefined && flags.cron !== undefined) throw new UsageError("give only one of --every or --cron");
  if (flags.tz !== undefined && flags.cron === undefined) throw new UsageError("--tz needs --cron");
  const everyMs = durationFlag(flags, "every", "30s, 5m, 1h");
  if (everyMs !== undefined && everyMs < 1_000)
    throw new UsageError(`--every "${flags.every}" is shorter than 1s: the shortest interval is 1s`);
  const until = flags.until === undefined ? undefined : new Date(instantFlag("until", flags.until)).toISOString();
  let maxOccurrences: number | undefined;
  if (flags["max-occurrences"] !== undefined) {
    maxOccurrences = Number(flags["max-occurrences"]);
    if (!Number.isSafeInteger(maxOccurrences) || maxOccurrences < 1)
      throw new UsageError(`--max-occurrences "${flags["max-occurrences"]}" is not a whole number ≥ 1, e.g. 10`);
  }
  const bound = { ...(until === undefined ? {} : { until }), ...(maxOccurrences === undefined ? {} : { maxOccurrences }) };
  return everyMs !== undefined ? { everyMs, ...bound } : { cron: flags.cron!, timezone: flags.tz ?? "UTC", ...bound };
}

function dueAtFrom(flags: Flags, nowMs: number, repeat: Repeat | undefined): number {
  if (flags.at !== undefined && flags.in !== undefined) throw new UsageError("give exactly one of --at or --in");
  if (flags.at === undefined && flags.in === undefined) {
    if (repeat === undefined) throw new UsageError("give exactly one of --at (e.g. --at 2026-03-01T09:00:00Z) or --in (e.g. --in 10m)");
    // A series without a start: --every starts one interval from now, --cron at its next time.
    return nowMs + (repeat.everyMs ?? 0);
  }
  if (flags.in !== undefined) return nowMs + durationFlag(flags, "in", '250ms, 10s, 5m, 2h, 1d, 1h30m, "10 minutes"')!;
  return instantFlag("at", flags.at!);
}

/** What every command carries besides its payload: `--correlation-id`, `--traceparent`, and whether to confirm. */
function commandOptions(flags: Flags, confirmByDefault: boolean): CommandOptions {
  const correlationId = flags["correlation-id"];
  const traceparent = traceparentFrom(flags.traceparent);
  return {
    ...(correlationId === undefined ? {} : { correlationId }),
    ...(traceparent === undefined ? {} : { traceparent }),
    ...(confirmByDefault && flags["no-confirm"] !== true ? { confirm: true } : {}),
  };
}

function isConfirmed(result: SendResult): result is ConfirmedResult {
  return "outcome" in result;
}

/** Prints a sent command: its outcome when confirmed, else where it was stored. */
export function printSent(result: SendResult, output: Output): void {
  const { command, commandId, subject, stream, seq } = result;
  const target = (command.payload.serviceCallId ?? `${String(command.payload.serviceCallIdPrefix)}*`) as string;
  if (!isConfirmed(result)) {
    output.out(JSON.stringify({ commandId, type: command.type, subject, stream, seq, command }));
    output.err(`${command.type} ${target}: stored (stream ${stream}, seq ${seq}); not confirmed`);
    return;
  }
  const { outcome, reason, code, timer } = result;
  output.out(JSON.stringify({ commandId, type: command.type, serviceCallId: result.serviceCallId, outcome, code, reason, timer }));
  const state =
    timer === undefined
      ? ""
      : ` — now ${timer.state}${timer.dueAt === null ? "" : `, due ${timer.dueAt}`} (generation ${timer.generation}${timer.occurrence === undefined ? "" : `, occurrence ${timer.occurrence}`})`;
  output.err(`${command.type} ${target}: ${outcome}${reason === "" ? "" : `: ${reason}`}${state}`);
}

/** The client's `confirmTimeoutMs` from `--confirm-timeout` (a duration). */
function confirmTimeoutOf(flags: Flags): number | undefined {
  const ms = durationFlag(flags, "confirm-timeout", "5s, 30s");
  if (ms !== undefined && ms < 1) throw new UsageError(`--confirm-timeout "${flags["confirm-timeout"]}" must be at least 1ms`);
  return ms;
}

async function send(flags: Flags, output: Output, use: (timers: TimerClient) => Promise<SendResult>): Promise<number> {
  const tenantId = required(flags, "tenant");
  const confirmTimeoutMs = confirmTimeoutOf(flags);
  const result = await withTimerClient(flags, tenantId, use, confirmTimeoutMs);
  printSent(result, output);
  return 0;
}

export function schedule(flags: Flags, output: Output): Promise<number> {
  const serviceCallId = required(flags, "id");
  required(flags, "tenant");
  const nowMs = Date.now();
  const repeat = repeatFrom(flags);
  const maxLatenessMs = durationFlag(flags, "max-lateness", "30s, 5m");
  const dueAtMs = dueAtFrom(flags, nowMs, repeat);
  const dueAt = new Date(dueAtMs).toISOString();
  const data = dataFrom(flags);
  const options = commandOptions(flags, true);
  if (flags.at !== undefined && dueAtMs < nowMs) {
    output.err(
      `timer-client: warning: --at ${dueAt} is ${formatDuration(nowMs - dueAtMs)} in the past; the timer fires as soon as the service reads the command`,
    );
  }
  return send(flags, output, (timers) =>
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

export function cancel(flags: Flags, output: Output): Promise<number> {
  if (flags["id-prefix"] !== undefined)
    throw new UsageError("cancel takes --id; cancel every timer whose id starts with P with: timer-client cancel-prefix --id-prefix P");
  const serviceCallId = required(flags, "id");
  const options = commandOptions(flags, true);
  return send(flags, output, (timers) => timers.cancel(serviceCallId, options));
}

export function cancelPrefix(flags: Flags, output: Output): Promise<number> {
  const serviceCallIdPrefix = flags["id-prefix"];
  if (serviceCallIdPrefix === undefined) throw new UsageError("--id-prefix is required, e.g. --id-prefix order-42:");
  if (flags.id !== undefined)
    throw new UsageError("cancel-prefix takes --id-prefix, not --id (cancel one timer with: timer-client cancel --id ID)");
  const options = commandOptions(flags, true);
  return send(flags, output, (timers) => timers.cancelPrefix(serviceCallIdPrefix, options));
}

/** The states a RetryTimer re-arms (CONTRACT §14). */
const RETRYABLE_STATES = ["Failed", "TimedOut", "Missed"] as const;

/** Publishes acked in parallel at most. */
const WINDOW = 256;

/** `retry --id X` sends one RetryTimer (confirmed); `retry --state S [--id-prefix P]` one per matching timer. */
export async function retry(flags: Flags, output: Output): Promise<number> {
  const tenantId = required(flags, "tenant");
  const state = flags.state;
  if (state === undefined) {
    if (flags["id-prefix"] !== undefined) throw new UsageError("--id-prefix needs --state (Failed, TimedOut or Missed)");
    const serviceCallId = required(flags, "id");
    const options = commandOptions(flags, true);
    return send(flags, output, (timers) => timers.retry(serviceCallId, options));
  }
  if (flags.id !== undefined) throw new UsageError("give --id or --state, not both");
  const retryable = RETRYABLE_STATES.find((s) => s === state);
  if (retryable === undefined) throw new UsageError(`--state "${state}" is not one of ${RETRYABLE_STATES.join(", ")}`);
  const serviceCallIdPrefix = flags["id-prefix"];
  const options = commandOptions(flags, false);
  const retried = await withTimerClient(flags, tenantId, async (timers) => {
    let cursor: string | null = null;
    let sent = 0;
    do {
      const page = await timers.list({
        state: retryable,
        limit: 1000,
        ...(serviceCallIdPrefix === undefined ? {} : { serviceCallIdPrefix }),
        ...(cursor === null ? {} : { cursor }),
      });
      for (let start = 0; start < page.timers.length; start += WINDOW) {
        await Promise.all(page.timers.slice(start, start + WINDOW).map(({ serviceCallId }) => timers.retry(serviceCallId, options)));
      }
      sent += page.timers.length;
      cursor = page.nextCursor;
    } while (cursor !== null);
    return sent;
  });
  output.out(JSON.stringify({ tenantId, state, ...(serviceCallIdPrefix === undefined ? {} : { serviceCallIdPrefix }), retried }));
  output.err(`sent ${retried} RetryTimer${retried === 1 ? "" : "s"} for the ${state} timers of ${tenantId}`);
  return 0;
}
