import type { ListQuery, TimerState } from "../types.js";
import { withTimerClient } from "./connection.js";
import { parseDuration } from "./durations.js";
import { timeline } from "./history-timeline.js";
import { instantFlag } from "./instant-flag.js";
import type { Flags } from "./options.js";
import { required, type Output } from "./send-commands.js";
import { UsageError } from "./usage-error.js";
import { EXIT } from "./exit-codes.js";

/** `get`: the timer as JSON; exit 1 when the tenant has no such timer. */
export async function get(flags: Flags, output: Output): Promise<number> {
  const tenantId = required(flags, "tenant");
  const serviceCallId = required(flags, "id");
  const timer = await withTimerClient(flags, tenantId, (timers) => timers.get(serviceCallId));
  if (timer === null) {
    output.err(`no timer "${serviceCallId}" for tenant ${tenantId}`);
    return EXIT.FAILED;
  }
  output.out(JSON.stringify(timer, null, 2));
  return EXIT.OK;
}

/** `history <serviceCallId>` (or `--id`): the timer's timeline, one line per entry; `--json` the reply as it came. */
export async function history(flags: Flags, positional: string | undefined, output: Output): Promise<number> {
  const tenantId = required(flags, "tenant");
  if (positional !== undefined && flags.id !== undefined) throw new UsageError("give the id once: timer-client history ID --tenant T");
  const serviceCallId = positional ?? flags.id;
  if (serviceCallId === undefined) throw new UsageError("which timer? timer-client history ID --tenant T");
  const reply = await withTimerClient(flags, tenantId, (timers) => timers.getHistory(serviceCallId));
  if (flags.json === true) output.out(JSON.stringify(reply, null, 2));
  else for (const line of timeline(serviceCallId, tenantId, reply)) output.out(line);
  return reply.timer === null && reply.history.length === 0 ? EXIT.FAILED : EXIT.OK;
}

export async function stats(flags: Flags, output: Output): Promise<number> {
  const tenantId = required(flags, "tenant");
  output.out(JSON.stringify(await withTimerClient(flags, tenantId, (timers) => timers.stats()), null, 2));
  return EXIT.OK;
}

const STATES: readonly TimerState[] = ["Scheduled", "Reached", "Cancelled", "Missed", "Fired", "Completed", "Failed", "TimedOut"];

/** `list`: timers as JSON lines, one page or `--all`; the next page's cursor goes to stderr. */
export async function list(flags: Flags, output: Output): Promise<number> {
  const tenantId = required(flags, "tenant");
  if (flags.all === true && flags.cursor !== undefined) throw new UsageError("give --cursor or --all, not both");
  if (flags.limit !== undefined && !/^\d+$/.test(flags.limit))
    throw new UsageError(`--limit "${flags.limit}" is not a number from 1 to 1000`);
  const order = flags.order === undefined ? undefined : ({ due: "due", changed: "changedDesc" } as Record<string, string>)[flags.order];
  if (flags.order !== undefined && order === undefined) throw new UsageError(`--order "${flags.order}" is not due or changed`);
  const state = flags.state === undefined ? undefined : STATES.find((s) => s === flags.state);
  if (flags.state !== undefined && state === undefined) throw new UsageError(`--state "${flags.state}" is not one of ${STATES.join(", ")}`);
  let changedSince: string | undefined;
  if (flags.since !== undefined) {
    const ago = parseDuration(flags.since);
    changedSince = new Date(ago === undefined ? instantFlag("since", flags.since) : Date.now() - ago).toISOString();
  }
  const base: ListQuery = {
    ...(order === undefined ? {} : { order }),
    ...(changedSince === undefined ? {} : { changedSince }),
    ...(flags["created-by"] === undefined ? {} : { createdBy: flags["created-by"] }),
    ...(state === undefined ? {} : { state }),
    ...(flags["id-prefix"] === undefined ? {} : { serviceCallIdPrefix: flags["id-prefix"] }),
    ...(flags["due-after"] === undefined ? {} : { dueAfter: new Date(instantFlag("due-after", flags["due-after"])).toISOString() }),
    ...(flags["due-before"] === undefined ? {} : { dueBefore: new Date(instantFlag("due-before", flags["due-before"])).toISOString() }),
    ...(flags.limit === undefined ? {} : { limit: Number(flags.limit) }),
  };
  await withTimerClient(flags, tenantId, async (timers) => {
    let cursor = flags.cursor ?? null;
    do {
      const page = await timers.list({ ...base, ...(cursor === null ? {} : { cursor }) });
      for (const timer of page.timers) output.out(JSON.stringify(timer));
      cursor = page.nextCursor;
    } while (flags.all === true && cursor !== null);
    if (cursor !== null) output.err(`more: --cursor ${cursor}`);
  });
  return EXIT.OK;
}
