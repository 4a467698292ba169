import type { ListQuery, TimerClient, TimerClientError } from "@timer-service/client";

/** Flags of `get`, `list` and `stats` (merged into the CLI's options in main.ts). */
export const QUERY_OPTIONS = {
  state: { type: "string" },
  "id-prefix": { type: "string" },
  "due-after": { type: "string" },
  "due-before": { type: "string" },
  limit: { type: "string" },
  cursor: { type: "string" },
  all: { type: "boolean" },
  order: { type: "string" },
  since: { type: "string" },
  "created-by": { type: "string" },
} as const;

export const QUERY_USAGE = `
  timer-service get --tenant T --id ID
      Print the timer as JSON (exit 1 when the tenant has no such timer).

  timer-service list --tenant T [--state S] [--id-prefix P] [--due-after WHEN]
                     [--due-before WHEN] [--created-by NAME] [--since DURATION|WHEN]
                     [--order due|changed] [--limit N] [--cursor C | --all]
      Print timers as JSON lines, by due time, or with --order changed most recently
      changed first. One page (--limit, default 100, at most 1000); the cursor of the
      next page goes to stderr. --all follows the cursors. --since: changed at or after
      that long ago (1h, 30m) or that instant. --created-by: exact createdBy.
      S is Scheduled, Reached, Cancelled, Missed, Fired, Completed, Failed or TimedOut.

  timer-service stats --tenant T
      Print the tenant's counts by state and next due time as JSON.
`;

interface QueryFlags {
  readonly state?: string | undefined;
  readonly "id-prefix"?: string | undefined;
  readonly "due-after"?: string | undefined;
  readonly "due-before"?: string | undefined;
  readonly limit?: string | undefined;
  readonly cursor?: string | undefined;
  readonly all?: boolean | undefined;
  readonly order?: string | undefined;
  readonly since?: string | undefined;
  readonly "created-by"?: string | undefined;
}

export interface QueryContext {
  readonly prefix: string;
  readonly tenant: string;
  /** The --id of `get`. */
  readonly id: () => string;
  readonly withClient: <T>(use: (timers: TimerClient) => Promise<T>) => Promise<T>;
  readonly usageError: (message: string) => Error;
  /** `--since`: a duration ago or an instant, as epoch ms; undefined when it is neither. */
  readonly sinceMs: (text: string) => number | undefined;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
}

function clientErrorOf(error: unknown): TimerClientError | undefined {
  // By name, not instanceof: the client is loaded lazily (see cli-connection.ts).
  return error instanceof Error && error.name === "TimerClientError" ? (error as TimerClientError) : undefined;
}

/**
 * A refused query (by the client's schemas or by the service) as `status: problem`, the service's
 * own error format; undefined for other failures.
 */
function refusal(error: TimerClientError): string | undefined {
  if (error.code !== "INVALID_INPUT" && error.code !== "INVALID_REQUEST" && error.code !== "SERVICE_ERROR") return undefined;
  const problem = (error.detail ?? error.message).replace(/^\//, "");
  return `${error.status ?? 400}: ${problem}`;
}

/** `get`, `list`, `stats` with `@timer-service/client` (CONTRACT §9). Returns the exit code. */
export async function runQueryCommand(command: "get" | "list" | "stats", flags: QueryFlags, ctx: QueryContext): Promise<number> {
  try {
    return await query(command, flags, ctx);
  } catch (error) {
    const clientError = clientErrorOf(error);
    if (clientError === undefined) throw error;
    const refused = refusal(clientError);
    if (refused !== undefined) {
      ctx.err(`timer-service: ${refused}`);
      return 2;
    }
    if (clientError.code === "TIMEOUT" || clientError.code === "NO_RESPONDERS") {
      const subject = `${ctx.prefix}.query.${command}.${ctx.tenant}`;
      throw new Error(`no answer on ${subject} (is timer-service running? ${clientError.message})`, { cause: error });
    }
    throw error;
  }
}

async function query(command: "get" | "list" | "stats", flags: QueryFlags, ctx: QueryContext): Promise<number> {
  if (command === "get") {
    const serviceCallId = ctx.id();
    const timer = await ctx.withClient((timers) => timers.get(serviceCallId));
    if (timer === null) {
      ctx.err(`no timer "${serviceCallId}" for tenant ${ctx.tenant}`);
      return 1;
    }
    ctx.out(JSON.stringify(timer, null, 2));
    return 0;
  }
  if (command === "stats") {
    ctx.out(JSON.stringify(await ctx.withClient((timers) => timers.stats()), null, 2));
    return 0;
  }
  if (flags.all === true && flags.cursor !== undefined) throw ctx.usageError("give --cursor or --all, not both");
  if (flags.limit !== undefined && !/^\d+$/.test(flags.limit)) throw ctx.usageError(`--limit "${flags.limit}" is not a number`);
  const order = flags.order === undefined ? undefined : ({ due: "due", changed: "changedDesc" } as Record<string, string>)[flags.order];
  if (flags.order !== undefined && order === undefined) throw ctx.usageError(`--order "${flags.order}" is not due or changed`);
  let changedSince: string | undefined;
  if (flags.since !== undefined) {
    const sinceMs = ctx.sinceMs(flags.since);
    if (sinceMs === undefined) throw ctx.usageError(`--since "${flags.since}" is neither a duration like 1h nor a time`);
    changedSince = new Date(sinceMs).toISOString();
  }
  // The state and the dates go as given: the client's schemas and the service judge them.
  const base: ListQuery = {
    ...(order === undefined ? {} : { order }),
    ...(changedSince === undefined ? {} : { changedSince }),
    ...(flags["created-by"] === undefined ? {} : { createdBy: flags["created-by"] }),
    ...(flags.state === undefined ? {} : { state: flags.state as ListQuery["state"] }),
    ...(flags["id-prefix"] === undefined ? {} : { serviceCallIdPrefix: flags["id-prefix"] }),
    ...(flags["due-after"] === undefined ? {} : { dueAfter: flags["due-after"] }),
    ...(flags["due-before"] === undefined ? {} : { dueBefore: flags["due-before"] }),
    ...(flags.limit === undefined ? {} : { limit: Number(flags.limit) }),
  };
  await ctx.withClient(async (timers) => {
    let cursor = flags.cursor ?? null;
    do {
      const page = await timers.list({ ...base, ...(cursor === null ? {} : { cursor }) });
      for (const timer of page.timers) ctx.out(JSON.stringify(timer));
      cursor = page.nextCursor;
    } while (flags.all === true && cursor !== null);
    if (cursor !== null) ctx.err(`more: --cursor ${cursor}`);
  });
  return 0;
}
