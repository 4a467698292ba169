import type { z } from "zod";
import { isTenantId } from "../commands/command-text.js";
import type { Clock } from "../clock.js";
import type { Logger } from "../logger.js";
import {
  DEFAULT_LIST_LIMIT,
  describeIssue,
  encodeChangedCursor,
  encodeCursor,
  getRequestSchema,
  listRequestSchema,
  statsRequestSchema,
} from "./query-requests.js";
import type { TimerQueries } from "./timer-queries.js";
import { statsView, timerView } from "./timer-view.js";
import { formatInstant } from "../../domain/due-time.js";
import { StatsCache } from "./stats-cache.js";
import { parseHistory } from "../../domain/timer-history.js";
import { FairQueryGate } from "./fair-query-gate.js";

export type QueryEndpoint = "get" | "list" | "stats";
export type QueryOutcome = "ok" | "error";

/** `timer_queries_total{endpoint,outcome}` (CONTRACT §8). */
export interface QueryMetrics {
  queryAnswered(endpoint: QueryEndpoint, outcome: QueryOutcome): void;
}

export type QueryErrorCode = "INVALID_REQUEST" | "INTERNAL" | "BUSY";

/** What a transport sends back: the status (HTTP status; NATS sends the error ones as service errors) and the JSON body. */
export type QueryReply =
  | { readonly status: 200 | 404; readonly body: object }
  | { readonly status: 400 | 500 | 503; readonly body: { readonly error: { readonly code: QueryErrorCode; readonly message: string } } };

export interface TimerQueryServiceDeps {
  readonly queries: TimerQueries;
  readonly clock: Clock;
  readonly metrics: QueryMetrics;
  readonly logger: Logger;
}

const HOUR_MS = 3_600_000;
/**
 * Index entries the chart counts at most per part (overdue; the next 24 hours): a bounded walk
 * (its cost is in docs/design/messages.md), so a huge backlog cannot stall the service.
 */
export const DUE_HISTOGRAM_CAP = 100_000;

/** Tenants the admin page lists at most. */
export const MAX_TENANTS = 1000;
/** How old a `stats` answer may be: counts are shared this long (see StatsCache). */
export const STATS_MAX_AGE_MS = 250;
/**
 * Queries accepted at once, over all tenants; more are refused as busy (503) rather than queued
 * without end. Each tenant's share is bounded by the gate (FairQueryGate), which runs them a few at
 * a time so that queries can never starve firing and commands of the event loop and the store.
 */
export const MAX_QUERIES_IN_FLIGHT = 1024;

const BUSY: QueryReply = { status: 503, body: { error: { code: "BUSY", message: "too many queries at once; retry shortly" } } };

function invalid(message: string): QueryReply {
  return { status: 400, body: { error: { code: "INVALID_REQUEST", message } } };
}

/**
 * The query use case (CONTRACT §9), shared by the NATS service and the HTTP routes: validates the
 * tenant and the request, asks the store's `TimerQueries`, shapes the answer, and counts it. A
 * storage fault becomes a 500 reply, logged; nothing here throws.
 */
export class TimerQueryService {
  readonly #stats: StatsCache;
  readonly #gate = new FairQueryGate();
  #inFlight = 0;

  constructor(private readonly deps: TimerQueryServiceDeps) {
    this.#stats = new StatsCache(deps.clock, STATS_MAX_AGE_MS);
  }

  async answer(endpoint: QueryEndpoint, tenantId: string, request: unknown): Promise<QueryReply> {
    let reply: QueryReply;
    if (this.#inFlight >= MAX_QUERIES_IN_FLIGHT) {
      reply = BUSY;
    } else {
      this.#inFlight++;
      try {
        reply = (await this.#gate.run(tenantId, () => this.#answer(endpoint, tenantId, request))) ?? BUSY;
      } finally {
        this.#inFlight--;
      }
    }
    // An unknown timer (404) is an answer, not an error.
    this.deps.metrics.queryAnswered(endpoint, reply.status === 200 || reply.status === 404 ? "ok" : "error");
    return reply;
  }

  /** A confirmed command of the tenant committed (CONTRACT §19): `stats` counts again rather than share an older answer. */
  commandConfirmed(tenantId: string): void {
    this.#stats.forget(tenantId);
  }

  /**
   * What is coming for the admin page's chart (not one of the §8 endpoints): the tenant's
   * `Scheduled` timers overdue now and due in each of the next 24 hours from now, each part counted up to
   * DUE_HISTOGRAM_CAP entries of the index (a lower bound beyond, flagged).
   */
  async dueHistogram(tenantId: string): Promise<QueryReply> {
    if (!isTenantId(tenantId)) return invalid("tenant must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$");
    const fromMs = this.deps.clock.now();
    try {
      const histogram = await this.deps.queries.dueHistogram({ tenantId, fromMs, bucketMs: HOUR_MS, buckets: 24, cap: DUE_HISTOGRAM_CAP });
      const hours = histogram.counts.map((count, i) => ({ start: formatInstant(fromMs + i * HOUR_MS), count }));
      return {
        status: 200,
        body: {
          tenantId,
          now: formatInstant(fromMs),
          overdue: histogram.overdue,
          overdueCapped: histogram.overdueCapped,
          hours,
          capped: histogram.capped,
        },
      };
    } catch (error) {
      return this.#failed("dueHistogram", error, tenantId);
    }
  }

  /** The tenants with stored timers (for the admin page); not one of the §8 endpoints. */
  async tenants(): Promise<QueryReply> {
    try {
      return { status: 200, body: { tenants: await this.deps.queries.tenants(MAX_TENANTS) } };
    } catch (error) {
      return this.#failed("tenants", error);
    }
  }

  async #answer(endpoint: QueryEndpoint, tenantId: string, request: unknown): Promise<QueryReply> {
    if (!isTenantId(tenantId)) return invalid("tenant must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$");
    const { queries, clock } = this.deps;
    try {
      switch (endpoint) {
        case "get": {
          const parsed = parse(getRequestSchema, request);
          if (!parsed.success) return invalid(parsed.message);
          const key = { tenantId, serviceCallId: parsed.data.serviceCallId };
          if (parsed.data.history === true) {
            const record = await queries.get(key, { history: true });
            if (record === undefined) return { status: 404, body: { timer: null, history: [] } };
            return { status: 200, body: { timer: timerView(record), history: parseHistory(record.history) } };
          }
          const record = await queries.get(key);
          return record === undefined ? { status: 404, body: { timer: null } } : { status: 200, body: { timer: timerView(record) } };
        }
        case "list": {
          const parsed = parse(listRequestSchema, request);
          if (!parsed.success) return invalid(parsed.message);
          const r = parsed.data;
          const order = r.order ?? "due";
          if (r.cursor != null && r.cursor.order !== order) return invalid(`cursor: is not a cursor of order ${order}`);
          const query = {
            tenantId,
            ...(r.state == null ? {} : { state: r.state }),
            ...(r.serviceCallIdPrefix == null ? {} : { serviceCallIdPrefix: r.serviceCallIdPrefix }),
            ...(r.dueAfter == null ? {} : { dueAfterMs: r.dueAfter }),
            ...(r.dueBefore == null ? {} : { dueBeforeMs: r.dueBefore }),
            ...(r.createdBy == null ? {} : { createdBy: r.createdBy }),
            ...(r.changedSince == null ? {} : { changedSinceMs: r.changedSince }),
            limit: r.limit ?? DEFAULT_LIST_LIMIT,
            nowMs: clock.now(),
          };
          const cursor = r.cursor ?? undefined;
          if (order === "changedDesc") {
            const afterChanged = cursor?.order === "changedDesc" ? { ...cursor } : undefined;
            const page = await queries.listChanged({ ...query, ...(afterChanged === undefined ? {} : { afterChanged }) });
            return {
              status: 200,
              body: { timers: page.timers.map(timerView), nextCursor: page.next === null ? null : encodeChangedCursor(page.next) },
            };
          }
          const after = cursor?.order === "due" ? { ...cursor } : undefined;
          const page = await queries.list({ ...query, ...(after === undefined ? {} : { after }) });
          return {
            status: 200,
            body: { timers: page.timers.map(timerView), nextCursor: page.next === null ? null : encodeCursor(page.next) },
          };
        }
        case "stats": {
          const parsed = parse(statsRequestSchema, request);
          if (!parsed.success) return invalid(parsed.message);
          const counts = await this.#stats.get(tenantId, () => queries.stats(tenantId));
          return { status: 200, body: statsView(tenantId, counts, clock.now()) };
        }
      }
    } catch (error) {
      return this.#failed(endpoint, error, tenantId);
    }
  }

  #failed(endpoint: string, error: unknown, tenantId?: string): QueryReply {
    this.deps.logger.error({ err: error, endpoint, tenantId }, "query failed");
    return { status: 500, body: { error: { code: "INTERNAL", message: "the query failed; see the service log" } } };
  }
}

/** An absent body (undefined) is an empty request. */
function parse<T extends z.ZodType>(
  schema: T,
  request: unknown,
): { success: true; data: z.output<T> } | { success: false; message: string } {
  const result = schema.safeParse(request ?? {});
  return result.success ? { success: true, data: result.data } : { success: false, message: describeIssue(result.error) };
}
