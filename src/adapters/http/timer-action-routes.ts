import type { IncomingMessage } from "node:http";
import type { ActionReply, OperatorActions, TokenKind } from "../../app/admin/operator-actions.js";

/** A POST body larger than this is refused: the largest valid one is a bulk retry's few members. */
export const MAX_ACTION_BODY_BYTES = 16_384;

const invalid = (message: string): ActionReply => ({ status: 400, body: { error: { code: "INVALID_REQUEST", message } } });
/** A POST to a path that is no action: the GET resources of §9 stay GET-only. */
const notAnAction: ActionReply = {
  status: 405,
  body: {
    error: {
      code: "METHOD_NOT_ALLOWED",
      message: "no action here; POST goes to …/timers/retry, …/timers/cancel, …/timers/{id}/retry|cancel",
    },
  },
};

/** The body as JSON (undefined when empty), or the 400 reply. */
async function readJsonBody(request: IncomingMessage): Promise<{ ok: true; body: unknown } | { ok: false; reply: ActionReply }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_ACTION_BODY_BYTES) return { ok: false, reply: invalid(`the body is over ${MAX_ACTION_BODY_BYTES} bytes`) };
    chunks.push(chunk);
  }
  if (size === 0) return { ok: true, body: undefined };
  const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") return { ok: false, reply: invalid("the body must be JSON (Content-Type: application/json)") };
  try {
    const body: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks)));
    if (typeof body !== "object" || body === null || Array.isArray(body))
      return { ok: false, reply: invalid("the body must be a JSON object") };
    return { ok: true, body };
  } catch {
    return { ok: false, reply: invalid("the body is not UTF-8 JSON") };
  }
}

/**
 * The POST routes of CONTRACT §14 under `/v1/tenants/{t}/timers`, after authentication: the caller
 * has checked that the token is the admin one. `segments` are the decoded path segments after `/v1`.
 */
export async function routeAction(
  request: IncomingMessage,
  segments: readonly string[],
  search: URLSearchParams,
  actions: OperatorActions,
  token: TokenKind,
): Promise<ActionReply> {
  const [tenants, tenantId, timers, ...rest] = segments;
  if (tenants !== "tenants" || tenantId === undefined || timers !== "timers") return notAnAction;
  if ([...search.keys()].length > 0) return invalid("actions take no query parameters");
  const read = await readJsonBody(request);
  if (!read.ok) return read.reply;
  const { body } = read;
  if (rest.length === 1 && rest[0] === "retry") return actions.retryBulk(tenantId, body, token);
  if (rest.length === 1 && rest[0] === "cancel") return actions.cancelPrefix(tenantId, body, token);
  if (rest.length === 2 && rest[1] === "retry") return actions.retry(tenantId, rest[0]!, body, token);
  if (rest.length === 2 && rest[1] === "cancel") return actions.cancel(tenantId, rest[0]!, body, token);
  return notAnAction;
}
