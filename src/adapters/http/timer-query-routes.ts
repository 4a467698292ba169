import { toJsonText } from "../../app/commands/json-text.js";
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { QueryEndpoint, QueryReply, TimerQueryService } from "../../app/queries/timer-query-service.js";
import type { OperatorActions, TokenKind } from "../../app/admin/operator-actions.js";
import { ADMIN_ASSETS } from "./admin-page.js";
import { routeAction } from "./timer-action-routes.js";

/** Answers a request it knows and returns true; returns false to leave it to the server (404). */
export type HttpRoutes = (request: IncomingMessage, response: ServerResponse) => boolean;

export interface TimerQueryRoutesOptions {
  readonly queries: TimerQueryService;
  /** TIMER_ADMIN_TOKEN; undefined: no route answers (the server says 404). */
  readonly adminToken: string | undefined;
  /** TIMER_ADMIN_READ_TOKEN: may use every GET and the page; a POST with it gets 403 (CONTRACT §14). */
  readonly readToken?: string | undefined;
  /** The POST actions of CONTRACT §14; undefined: POST is 405. */
  readonly actions?: OperatorActions | undefined;
}

const sha256 = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest();

/** Constant time in the token's content: both sides are hashed to 32 bytes first. */
export function tokenMatches(presented: string, expected: string): boolean {
  return timingSafeEqual(sha256(presented), sha256(expected));
}

function bearerToken(request: IncomingMessage): string | undefined {
  const match = /^Bearer[ ]+(\S+)[ ]*$/i.exec(request.headers.authorization ?? "");
  return match?.[1];
}

/** Why `/` and `/v1` answer 404, in the body and in the start-up log. */
export const ADMIN_DISABLED =
  "the admin page and the /v1 query API are disabled: start the service with TIMER_ADMIN_TOKEN set (16 or more printable characters) and send it as Authorization: Bearer <token>";

const SECURITY_HEADERS = { "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer" };

function json(response: ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  response.writeHead(status, { "Content-Type": "application/json; charset=utf-8", ...SECURITY_HEADERS, ...headers });
  response.end(toJsonText(body));
}

const invalid = (message: string): QueryReply => ({ status: 400, body: { error: { code: "INVALID_REQUEST", message } } });

/**
 * The query string as a request object: each member once; `limit` as a number when it is digits.
 * Members are defined, not assigned, so that `__proto__` is a member like any other (and refused
 * as unknown) instead of silently setting the prototype.
 */
function queryObject(params: URLSearchParams): Record<string, unknown> | string {
  const request: Record<string, unknown> = {};
  for (const [name, value] of params) {
    if (Object.hasOwn(request, name)) return `${name} is given more than once`;
    const member = name === "limit" && /^\d{1,7}$/.test(value) ? Number(value) : value;
    Object.defineProperty(request, name, { value: member, enumerable: true, writable: true, configurable: true });
  }
  return request;
}

/** Which configured token the request carries, compared in constant time; undefined: none of them. */
function tokenKind(request: IncomingMessage, adminToken: string, readToken: string | undefined): TokenKind | undefined {
  const token = bearerToken(request);
  if (token === undefined) return undefined;
  // Both comparisons always run, so the timing does not tell which token was close.
  const admin = tokenMatches(token, adminToken);
  const read = readToken !== undefined && tokenMatches(token, readToken);
  return admin ? "admin" : read ? "read" : undefined;
}

/**
 * The HTTP side of CONTRACT §9: `GET /v1/tenants/{t}/timers/{serviceCallId}`,
 * `GET /v1/tenants/{t}/timers?…`, `GET /v1/tenants/{t}/stats`, plus `GET /v1/tenants` (the tenants
 * with stored timers, for the page), all behind `Authorization: Bearer {TIMER_ADMIN_TOKEN}`; and the
 * admin page at `/` (it holds no data: it asks for the token and calls /v1).
 */
export function timerQueryRoutes(options: TimerQueryRoutesOptions): HttpRoutes {
  const { queries, adminToken, readToken, actions } = options;
  return (request, response) => {
    const rawPath = (request.url ?? "/").split("?")[0] ?? "/";
    const asset = ADMIN_ASSETS.get(rawPath);
    const isApi = rawPath === "/v1" || rawPath.startsWith("/v1/");
    if (adminToken === undefined) {
      // Off by default: the 404 says how to turn it on, rather than looking like a wrong address.
      if (asset === undefined && !isApi) return false;
      json(response, 404, { error: "not found", hint: ADMIN_DISABLED });
      return true;
    }
    if (asset === undefined && !isApi) return false;
    const isAction = request.method === "POST" && isApi && actions !== undefined;
    if (request.method !== "GET" && request.method !== "HEAD" && !isAction) {
      const allow = isApi && actions !== undefined ? "GET, HEAD, POST" : "GET, HEAD";
      json(response, 405, { error: { code: "METHOD_NOT_ALLOWED", message: `only ${allow}` } }, { Allow: allow });
      return true;
    }
    if (asset !== undefined) {
      response.writeHead(200, { "Content-Type": asset.contentType, ...SECURITY_HEADERS, ...asset.headers });
      response.end(asset.body);
      return true;
    }
    const kind = tokenKind(request, adminToken, readToken);
    if (kind === undefined) {
      json(
        response,
        401,
        { error: { code: "UNAUTHORIZED", message: "send Authorization: Bearer <TIMER_ADMIN_TOKEN>" } },
        { "WWW-Authenticate": 'Bearer realm="timer-service"' },
      );
      return true;
    }
    if (isAction) {
      if (kind !== "admin") {
        json(response, 403, { error: { code: "FORBIDDEN", message: "the read-only token cannot act; use TIMER_ADMIN_TOKEN" } });
        return true;
      }
      const parsed = new URL(request.url ?? "/", "http://localhost");
      let segments: string[];
      try {
        segments = parsed.pathname.split("/").slice(2).map(decodeURIComponent);
      } catch {
        json(response, 400, invalid("the path is not valid percent-encoded UTF-8").body);
        return true;
      }
      routeAction(request, segments, parsed.searchParams, actions!, kind).then(
        (reply) => json(response, reply.status, reply.body, reply.status === 405 ? { Allow: "GET, HEAD" } : {}),
        () => json(response, 500, { error: { code: "INTERNAL", message: "the action failed; see the service log" } }),
      );
      return true;
    }
    route(request.url ?? "/", queries).then(
      (reply) => json(response, reply.status, reply.body),
      () => json(response, 500, { error: { code: "INTERNAL", message: "the query failed; see the service log" } }),
    );
    return true;
  };
}

async function route(url: string, queries: TimerQueryService): Promise<{ readonly status: number; readonly body: object }> {
  const parsed = new URL(url, "http://localhost");
  let segments: string[];
  try {
    segments = parsed.pathname.split("/").slice(2).map(decodeURIComponent);
  } catch {
    return invalid("the path is not valid percent-encoded UTF-8");
  }
  const request = queryObject(parsed.searchParams);
  if (typeof request === "string") return invalid(request);
  const [tenants, tenantId, resource, serviceCallId, ...rest] = segments;
  if (tenants !== "tenants" || rest.length > 0) return notFound();
  if (tenantId === undefined || (tenantId === "" && resource === undefined)) {
    return Object.keys(request).length > 0 ? invalid("GET /v1/tenants takes no parameters") : queries.tenants();
  }
  let endpoint: QueryEndpoint;
  let body: Record<string, unknown> = request;
  if (resource === "due-histogram" && serviceCallId === undefined) {
    return Object.keys(request).length > 0 ? invalid("due-histogram takes no parameters") : queries.dueHistogram(tenantId);
  }
  if (resource === "stats" && serviceCallId === undefined) endpoint = "stats";
  else if (resource === "timers" && serviceCallId === undefined) endpoint = "list";
  else if (resource === "timers" && serviceCallId !== undefined) {
    const { history, ...others } = request;
    if (Object.keys(others).length > 0) return invalid("GET of one timer takes only history=true");
    if (history !== undefined && history !== "true" && history !== "false") return invalid("history: must be true or false");
    endpoint = "get";
    body = history === "true" ? { serviceCallId, history: true } : { serviceCallId };
  } else return notFound();
  return queries.answer(endpoint, tenantId, body);
}

function notFound(): { status: 404; body: object } {
  return { status: 404, body: { error: { code: "NOT_FOUND", message: "no such resource; see docs/design/messages.md" } } };
}
