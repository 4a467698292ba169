import { randomUUID } from "node:crypto";
import type { z } from "zod";
import type { Clock } from "../clock.js";
import type { Logger } from "../logger.js";
import { isServiceCallId, isTenantId } from "../commands/command-text.js";
import { cancelTimerPayloadSchema } from "../commands/command-envelope.schema.js";
import { describeIssue, encodeCursor } from "../queries/query-requests.js";
import type { ListPosition, TimerQueries } from "../queries/timer-queries.js";
import { bulkRetryRequestSchema, cancelPrefixRequestSchema, emptyRequestSchema, MAX_BULK_RETRY } from "./action-requests.js";
import { COMMAND_KINDS } from "../subjects.js";
import { OPERATOR_COMMAND_ID_PREFIX } from "../../domain/timer-history.js";

/** `timer_admin_actions_total{action}` (CONTRACT §14). */
export type AdminAction = "retry" | "cancel" | "retry_bulk" | "cancel_prefix";
export const ADMIN_ACTIONS: readonly AdminAction[] = ["retry", "cancel", "retry_bulk", "cancel_prefix"];

/** Which bearer token a request carried; logged with each action, the token itself never. */
export type TokenKind = "admin" | "read";

export interface AdminActionMetrics {
  actionTaken(action: AdminAction): void;
}

/** A command the HTTP API produces, as any producer would send it (CONTRACT §2 envelope). */
export interface OutgoingCommand {
  /** The subject's kind token: `retry`, `cancel`, `cancelprefix`. */
  readonly kind: "retry" | "cancel" | "cancelprefix";
  readonly tenantId: string;
  readonly envelope: {
    readonly id: string;
    readonly type: "RetryTimer" | "CancelTimer" | "CancelTimersByPrefix";
    readonly tenantId: string;
    readonly timestampMs: number;
    readonly payload: Readonly<Record<string, string>>;
  };
}

/**
 * Puts commands into the commands stream. Resolves once the stream has stored every one of them;
 * rejects when any could not be stored (some may have been).
 */
export interface CommandSender {
  send(commands: readonly OutgoingCommand[]): Promise<void>;
}

export type ActionReply =
  | {
      readonly status: 202;
      readonly body: { readonly commandIds: readonly string[]; readonly more?: boolean; readonly nextCursor?: string };
    }
  | {
      readonly status: 400 | 404 | 405 | 500 | 503;
      readonly body: { readonly error: { readonly code: string; readonly message: string } };
    };

export interface OperatorActionsDeps {
  readonly queries: TimerQueries;
  /** Undefined until the broker is connected: actions answer 503 meanwhile. */
  readonly sender: () => CommandSender | undefined;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: AdminActionMetrics;
  readonly newId?: () => string;
}

/** Timers a bulk retry lists per page of the query port. */
const PAGE = 1_000;
/**
 * Pages one bulk retry examines at most: a rare prefix makes short pages (each scans a bounded
 * index range), so the work of one call stays bounded and the reply says `more`.
 */
const MAX_PAGES = 40;

const error = (status: 400 | 404 | 500 | 503, code: string, message: string): ActionReply => ({
  status,
  body: { error: { code, message } },
});
const invalid = (message: string) => error(400, "INVALID_REQUEST", message);

function parse<T extends z.ZodType>(schema: T, body: unknown): { ok: true; data: z.output<T> } | { ok: false; reply: ActionReply } {
  const result = schema.safeParse(body ?? {});
  return result.success ? { ok: true, data: result.data } : { ok: false, reply: invalid(describeIssue(result.error)) };
}

/**
 * Operator actions over HTTP (CONTRACT §14): each one turns into commands published to the
 * commands stream like any producer's, so every §3 rule holds unchanged; the reply (202) comes once
 * the stream stored them. Logs and counts every action; nothing here throws.
 */
export class OperatorActions {
  readonly #newId: () => string;

  constructor(private readonly deps: OperatorActionsDeps) {
    // The prefix marks the command as an operator's in its timer's history (CONTRACT §19).
    this.#newId = deps.newId ?? (() => `${OPERATOR_COMMAND_ID_PREFIX}${randomUUID()}`);
  }

  /** `POST /v1/tenants/{t}/timers/{serviceCallId}/retry` → one `RetryTimer`; 404 for an unknown timer. */
  retry(tenantId: string, serviceCallId: string, body: unknown, token: TokenKind): Promise<ActionReply> {
    return this.#single("retry", tenantId, serviceCallId, body, token);
  }

  /** `POST /v1/tenants/{t}/timers/{serviceCallId}/cancel` → one `CancelTimer`; 404 for an unknown timer. */
  cancel(tenantId: string, serviceCallId: string, body: unknown, token: TokenKind): Promise<ActionReply> {
    return this.#single("cancel", tenantId, serviceCallId, body, token);
  }

  /** `POST /v1/tenants/{t}/timers/retry` → a `RetryTimer` per matching timer, at most 10,000. */
  async retryBulk(tenantId: string, body: unknown, token: TokenKind): Promise<ActionReply> {
    if (!isTenantId(tenantId)) return invalid("tenant must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$");
    const parsed = parse(bulkRetryRequestSchema, body);
    if (!parsed.ok) return parsed.reply;
    const { state, serviceCallIdPrefix, limit, cursor } = parsed.data;
    const wanted = limit ?? MAX_BULK_RETRY;
    return this.#guard("retry_bulk", tenantId, async () => {
      const ids: string[] = [];
      const nowMs = this.deps.clock.now();
      const query = { tenantId, state, ...(serviceCallIdPrefix == null ? {} : { serviceCallIdPrefix }), nowMs };
      let after: ListPosition | undefined = cursor ?? undefined;
      let more = false;
      for (let pages = 0; ids.length < wanted; pages++) {
        if (pages === MAX_PAGES) {
          more = true;
          break;
        }
        const limit = Math.min(PAGE, wanted - ids.length);
        const page = await this.deps.queries.list({ ...query, limit, ...(after === undefined ? {} : { after }) });
        for (const timer of page.timers) ids.push(timer.serviceCallId);
        if (page.next === null) break;
        after = page.next;
        if (ids.length === wanted) {
          // Full: one look ahead says whether anything is left, so `more` is not a guess.
          const peek = await this.deps.queries.list({ ...query, limit: 1, after });
          more = peek.timers.length > 0 || peek.next !== null;
        }
      }
      const commands = ids.map((serviceCallId) => this.#command("retry", tenantId, { tenantId, serviceCallId }));
      await this.#send(commands);
      this.#done("retry_bulk", token, {
        tenantId,
        state,
        serviceCallIdPrefix: serviceCallIdPrefix ?? undefined,
        count: commands.length,
        more,
      });
      return {
        status: 202,
        body: {
          commandIds: commands.map((c) => c.envelope.id),
          more,
          ...(more && after !== undefined ? { nextCursor: encodeCursor(after) } : {}),
        },
      };
    });
  }

  /** `POST /v1/tenants/{t}/timers/cancel` → one `CancelTimersByPrefix`. */
  async cancelPrefix(tenantId: string, body: unknown, token: TokenKind): Promise<ActionReply> {
    if (!isTenantId(tenantId)) return invalid("tenant must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$");
    const parsed = parse(cancelPrefixRequestSchema, body);
    if (!parsed.ok) return parsed.reply;
    const { serviceCallIdPrefix } = parsed.data;
    return this.#guard("cancel_prefix", tenantId, async () => {
      const command = this.#command("cancelprefix", tenantId, { tenantId, serviceCallIdPrefix });
      await this.#send([command]);
      this.#done("cancel_prefix", token, { tenantId, serviceCallIdPrefix, count: 1 });
      return { status: 202, body: { commandIds: [command.envelope.id] } };
    });
  }

  async #single(
    action: "retry" | "cancel",
    tenantId: string,
    serviceCallId: string,
    body: unknown,
    token: TokenKind,
  ): Promise<ActionReply> {
    if (!isTenantId(tenantId)) return invalid("tenant must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$");
    if (!isServiceCallId(serviceCallId)) return invalid("serviceCallId must be 1..256 code points without control characters");
    const parsed = parse(emptyRequestSchema, body);
    if (!parsed.ok) return parsed.reply;
    // The same payload rules a producer's command meets (CONTRACT §2).
    if (!cancelTimerPayloadSchema.safeParse({ tenantId, serviceCallId }).success) return invalid("not a valid timer key");
    return this.#guard(action, tenantId, async () => {
      if ((await this.deps.queries.get({ tenantId, serviceCallId })) === undefined) {
        return error(404, "NOT_FOUND", "no such timer");
      }
      const command = this.#command(action, tenantId, { tenantId, serviceCallId });
      await this.#send([command]);
      this.#done(action, token, { tenantId, serviceCallId, count: 1 });
      return { status: 202, body: { commandIds: [command.envelope.id] } };
    });
  }

  #command(kind: OutgoingCommand["kind"], tenantId: string, payload: Record<string, string>): OutgoingCommand {
    const type = COMMAND_KINDS[kind];
    return { kind, tenantId, envelope: { id: this.#newId(), type, tenantId, timestampMs: this.deps.clock.now(), payload } };
  }

  async #send(commands: readonly OutgoingCommand[]): Promise<void> {
    if (commands.length === 0) return;
    const sender = this.deps.sender();
    if (sender === undefined) throw new BrokerUnavailable();
    await sender.send(commands);
  }

  #done(action: AdminAction, token: TokenKind, fields: Record<string, unknown>): void {
    this.deps.metrics.actionTaken(action);
    this.deps.logger.info({ action, token, ...fields }, "operator action");
  }

  async #guard(action: AdminAction, tenantId: string, run: () => Promise<ActionReply>): Promise<ActionReply> {
    try {
      return await run();
    } catch (failure) {
      if (failure instanceof BrokerUnavailable) return error(503, "UNAVAILABLE", "the broker is not connected; retry shortly");
      this.deps.logger.error({ err: failure, action, tenantId }, "operator action failed");
      return error(503, "UNAVAILABLE", "the commands could not all be stored in the commands stream; retry (repeating is harmless)");
    }
  }
}

class BrokerUnavailable extends Error {
  override readonly name = "BrokerUnavailable";
}
