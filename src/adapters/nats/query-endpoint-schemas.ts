import { schemaJsonText } from "../contract-documents.js";
import type { QueryEndpoint } from "../../app/queries/timer-query-service.js";

const SCHEMA_NAMES: Record<QueryEndpoint, readonly [request: string, reply: string]> = {
  get: ["GetTimerRequest", "GetTimerReply"],
  list: ["ListTimersRequest", "ListTimersReply"],
  stats: ["TimerStatsRequest", "TimerStatsReply"],
};

/**
 * The published JSON Schemas of an endpoint's request and reply, as micro endpoint metadata
 * (`nats micro info timer-service` shows them); nothing when the schema files are not deployed.
 */
export function endpointSchemaMetadata(endpoint: QueryEndpoint): Record<string, string> {
  const [request, reply] = SCHEMA_NAMES[endpoint];
  const requestSchema = schemaJsonText(request);
  const replySchema = schemaJsonText(reply);
  return {
    ...(requestSchema === undefined ? {} : { request_schema: requestSchema }),
    ...(replySchema === undefined ? {} : { response_schema: replySchema }),
  };
}
