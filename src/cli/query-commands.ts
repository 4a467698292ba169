import type { NatsConnection } from "@nats-io/transport-node";

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
  readonly withConnection: <T>(use: (nc: NatsConnection) => Promise<T>) => Promise<T>;
  readonly usageError: (message: string) => Error;
  /** `--since`: a duration ago or an instant, as epoch ms; undefined when it is neither. */
  readonly sinceMs: (text: string) => number | undefined;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
}

/** A query's error reply (`Nats-Service-Error-Code`): its message, exit code 2 for a bad request. */
class QueryFailed extends Error {
  override readonly name = "QueryFailed";
}

async function request(nc: NatsConnection, subject: string, body: object): Promise<Record<string, unknown>> {
  let reply;
  try {
    reply = await nc.request(subject, JSON.stringify(body), { timeout: 10_000 });
  } catch (error) {
    throw new Error(`no answer on ${subject} (is timer-service running? ${(error as Error).message})`, { cause: error });
  }
  const code = reply.headers?.get("Nats-Service-Error-Code");
  if (code) throw new QueryFailed(`${code}: ${reply.headers?.get("Nats-Service-Error") ?? "query failed"}`);
  return reply.json();
}

/** `get`, `list`, `stats` over NATS request/reply (CONTRACT §9). Returns the exit code. */
export async function runQueryCommand(command: "get" | "list" | "stats", flags: QueryFlags, ctx: QueryContext): Promise<number> {
  const subject = `${ctx.prefix}.query.${command}.${ctx.tenant}`;
  try {
    if (command === "get") {
      const { timer } = await ctx.withConnection((nc) => request(nc, subject, { serviceCallId: ctx.id() }));
      if (timer === null) {
        ctx.err(`no timer "${ctx.id()}" for tenant ${ctx.tenant}`);
        return 1;
      }
      ctx.out(JSON.stringify(timer, null, 2));
      return 0;
    }
    if (command === "stats") {
      ctx.out(JSON.stringify(await ctx.withConnection((nc) => request(nc, subject, {})), null, 2));
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
    const base = {
      ...(order === undefined ? {} : { order }),
      ...(changedSince === undefined ? {} : { changedSince }),
      ...(flags["created-by"] === undefined ? {} : { createdBy: flags["created-by"] }),
      ...(flags.state === undefined ? {} : { state: flags.state }),
      ...(flags["id-prefix"] === undefined ? {} : { serviceCallIdPrefix: flags["id-prefix"] }),
      ...(flags["due-after"] === undefined ? {} : { dueAfter: flags["due-after"] }),
      ...(flags["due-before"] === undefined ? {} : { dueBefore: flags["due-before"] }),
      ...(flags.limit === undefined ? {} : { limit: Number(flags.limit) }),
    };
    await ctx.withConnection(async (nc) => {
      let cursor = flags.cursor ?? null;
      do {
        const page = (await request(nc, subject, { ...base, ...(cursor === null ? {} : { cursor }) })) as {
          timers: unknown[];
          nextCursor: string | null;
        };
        for (const timer of page.timers) ctx.out(JSON.stringify(timer));
        cursor = page.nextCursor;
      } while (flags.all === true && cursor !== null);
      if (cursor !== null) ctx.err(`more: --cursor ${cursor}`);
    });
    return 0;
  } catch (error) {
    if (error instanceof QueryFailed) {
      ctx.err(`timer-service: ${error.message}`);
      return 2;
    }
    throw error;
  }
}
