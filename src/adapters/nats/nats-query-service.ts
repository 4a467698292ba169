import { toJsonText } from "../../app/commands/json-text.js";
import { Svcm, type Service, type ServiceMsg } from "@nats-io/services";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../../app/logger.js";
import type { QueryEndpoint, QueryReply, TimerQueryService } from "../../app/queries/timer-query-service.js";
import { endpointSchemaMetadata } from "./query-endpoint-schemas.js";
import { headerText } from "./header-text.js";
import { queryEndpointSubject, queryEndpointsPattern } from "../../app/subjects.js";

/** The micro service's name: `nats micro ls` lists it so, and `$SRV.*.timer-service` reaches it. */
export const QUERY_SERVICE_NAME = "timer-service";
const ENDPOINTS: readonly QueryEndpoint[] = ["get", "list", "stats"];

export interface NatsQueryServiceOptions {
  readonly subjectPrefix: string;
  readonly version: string;
  readonly logger: Logger;
}

const encoder = new TextEncoder();

/**
 * Queries over NATS (CONTRACT §9) as a NATS micro service: endpoints `get`, `list`, `stats` on
 * `{prefix}.query.{endpoint}.*`, the tenant being the last token. Instances share the protocol's
 * default queue group, so each request is answered once. An error is a reply with the headers
 * `Nats-Service-Error-Code` and `Nats-Service-Error` and the JSON error body.
 */
export class NatsQueryService {
  private constructor(private readonly service: Service) {}

  static async start(connection: NatsConnection, queries: TimerQueryService, options: NatsQueryServiceOptions): Promise<NatsQueryService> {
    // @nats-io/services 3.0.0-25 types its connection with its own nats-core prerelease; the
    // transport's connection is the same interface at run time (checked by the NATS query tests).
    const service = await new Svcm(connection as unknown as ConstructorParameters<typeof Svcm>[0]).add({
      name: QUERY_SERVICE_NAME,
      version: options.version,
      description: "Durable timers: look timers up, list them, count them per tenant",
      metadata: { subjects: queryEndpointsPattern(options.subjectPrefix) },
    });
    for (const endpoint of ENDPOINTS) {
      service.addEndpoint(endpoint, {
        subject: queryEndpointSubject(options.subjectPrefix, endpoint),
        metadata: { tenant: "last subject token", ...endpointSchemaMetadata(endpoint) },
        // The library catches only a synchronous throw: the answer's promise handles its own errors.
        handler: (error, msg) => {
          if (error !== null) {
            options.logger.error({ err: error, endpoint }, "query endpoint stopped");
            return;
          }
          void answer(service, endpoint, msg, queries, options.logger);
        },
      });
    }
    return new NatsQueryService(service);
  }

  async stop(): Promise<void> {
    await this.service.stop().catch(() => undefined);
  }
}

async function answer(
  service: Service,
  endpoint: QueryEndpoint,
  msg: ServiceMsg,
  queries: TimerQueryService,
  logger: Logger,
): Promise<void> {
  try {
    const tenantId = msg.subject.split(".").at(-1) ?? "";
    const request = parseBody(msg.data);
    const reply: QueryReply =
      request === INVALID_JSON
        ? { status: 400, body: { error: { code: "INVALID_REQUEST", message: "the body is not UTF-8 JSON" } } }
        : await queries.answer(endpoint, tenantId, request);
    const body = encoder.encode(toJsonText(reply.body));
    if (reply.status === 400 || reply.status === 500 || reply.status === 503) {
      msg.respondError(reply.status, headerText(reply.body.error.message), body);
      countError(service, endpoint, reply.body.error.message);
    } else {
      msg.respond(body);
    }
  } catch (error) {
    logger.error({ err: error, endpoint, subject: msg.subject }, "answering a query failed");
    countError(service, endpoint, "internal error");
    try {
      msg.respondError(500, "internal error", encoder.encode(JSON.stringify({ error: { code: "INTERNAL", message: "internal error" } })));
    } catch {
      // the connection is gone; the requester times out
    }
  }
}

const INVALID_JSON = Symbol("invalid JSON");
const decoder = new TextDecoder("utf-8", { fatal: true });

/** An empty body is an empty request (`nats req timer.query.stats.acme ""`). */
function parseBody(data: Uint8Array): unknown {
  if (data.length === 0) return undefined;
  try {
    return JSON.parse(decoder.decode(data)) as unknown;
  } catch {
    return INVALID_JSON;
  }
}

/**
 * `respondError` does not count the error in the endpoint's `num_errors` (the library counts only
 * a handler that throws, and then replies without a body). The endpoint's stats object is reached
 * through the service's internals when they have the expected shape; otherwise only
 * `timer_queries_total{outcome="error"}` counts it.
 */
function countError(service: Service, endpoint: string, message: string): void {
  const handlers = (service as unknown as { handlers?: { name?: string; stats?: { countError?: (e: Error) => void } }[] }).handlers;
  handlers?.find((h) => h.name === endpoint)?.stats?.countError?.(new Error(message));
}
