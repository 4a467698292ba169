import { COMMAND_MESSAGES, EVENT_MESSAGES, OUTCOME_MESSAGE, QUERY_ERROR_MESSAGE, QUERY_MESSAGES } from "../../src/app/message-catalog.js";
import { commandSubject, eventSubject, outcomeSubject, querySubject } from "../../src/app/subjects.js";

/** The default subject prefix (TIMER_SUBJECT_PREFIX): the document shows the default layout. */
const PREFIX = "timer";

/**
 * The AsyncAPI 3.0 document of the contract, from the same catalog as the schemas. It describes
 * the service's side: it receives commands and query requests, and sends events and replies.
 * Subjects use the default prefix `timer` (TIMER_SUBJECT_PREFIX changes the first token).
 */

const TENANT_ID_PARAMETER = {
  tenantId: {
    description:
      "The tenant: ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$, not _unknown. It must be the same as the envelope's and the payload's tenantId.",
  },
};

const TRACEPARENT = {
  type: "string",
  description: "W3C Trace Context traceparent (CONTRACT §13).",
  pattern: "^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$",
};
const TRACESTATE = { type: "string", description: "W3C Trace Context tracestate, copied unchanged from the command to its events." };

const HEADERS = {
  CommandHeaders: {
    type: "object",
    properties: {
      "Nats-Msg-Id": {
        type: "string",
        description: "Optional: JetStream de-duplicates a re-sent command with the same id (the client sends the envelope id).",
      },
      traceparent: TRACEPARENT,
      tracestate: TRACESTATE,
      "Timer-Confirm": {
        type: "string",
        enum: ["1"],
        description: "Optional (CONTRACT §19): 1 asks for one CommandOutcome on timer.outcomes.{tenantId} once the command is decided.",
      },
    },
  },
  EventHeaders: {
    type: "object",
    // The service sets both on every event it publishes (CONTRACT §1, §13).
    required: ["Nats-Msg-Id", "traceparent"],
    properties: {
      "Nats-Msg-Id": {
        type: "string",
        description:
          "The envelope id. DueTimeReached and DueTimeMissed: {tenantId}:{serviceCallId}:{dueAtMs}:{generation}, with :{attempt} from the second attempt on; CommandRejected: rejected:{stream}:{streamSequence}:{storedAtMs} of the rejected command.",
      },
      traceparent: {
        ...TRACEPARENT,
        description:
          "W3C Trace Context traceparent (CONTRACT §13), on every event: the command's trace-id and flags (a new trace when the command had no valid traceparent) and a span-id of the service's own.",
      },
      tracestate: TRACESTATE,
    },
  },
  QueryErrorHeaders: {
    type: "object",
    properties: {
      "Nats-Service-Error-Code": { type: "string", description: "400 for a malformed request, 500 or 503 otherwise." },
      "Nats-Service-Error": {
        type: "string",
        description: "The error message in printable ASCII (at most 512 characters; the body's message is the full text).",
      },
    },
  },
};

const ref = (pointer: string) => ({ $ref: pointer });
const payload = (name: string) => ref(`./schemas/${name}.json`);
const channelId = (kind: string, token: string) => `${kind}${token[0]!.toUpperCase()}${token.slice(1)}`;

export function asyncApiDocument(version: string): object {
  const channels: Record<string, object> = {};
  const operations: Record<string, object> = {};
  const messages: Record<string, object> = {};

  for (const m of COMMAND_MESSAGES) {
    const id = channelId("commands", m.token);
    messages[m.name] = {
      name: m.name,
      title: m.name,
      summary: m.summary,
      contentType: "application/json",
      headers: ref("#/components/schemas/CommandHeaders"),
      payload: payload(m.name),
    };
    channels[id] = {
      address: commandSubject(PREFIX, m.token, "{tenantId}"),
      description: `${m.name} commands, captured by the stream TIMER_COMMANDS. A bare payload (an object without a payload member) is also accepted.`,
      parameters: { tenantId: ref("#/components/parameters/tenantId") },
      messages: { [m.name]: ref(`#/components/messages/${m.name}`) },
    };
    operations[`receive${m.name}`] = {
      action: "receive",
      summary: m.summary,
      channel: ref(`#/channels/${id}`),
      messages: [ref(`#/channels/${id}/messages/${m.name}`)],
    };
  }

  for (const m of EVENT_MESSAGES) {
    const id = channelId("events", m.token);
    messages[m.name] = {
      name: m.name,
      title: m.name,
      summary: m.summary,
      contentType: "application/json",
      headers: ref("#/components/schemas/EventHeaders"),
      payload: payload(m.name),
    };
    channels[id] = {
      address: eventSubject(PREFIX, m.token, "{tenantId}"),
      description: `${m.name} events, published with JetStream to the stream TIMER_EVENTS (publish ack awaited).`,
      parameters: { tenantId: ref("#/components/parameters/tenantId") },
      messages: { [m.name]: ref(`#/components/messages/${m.name}`) },
    };
    operations[`send${m.name}`] = {
      action: "send",
      summary: m.summary,
      channel: ref(`#/channels/${id}`),
      messages: [ref(`#/channels/${id}/messages/${m.name}`)],
    };
  }

  messages[OUTCOME_MESSAGE.name] = {
    name: OUTCOME_MESSAGE.name,
    title: OUTCOME_MESSAGE.name,
    summary: OUTCOME_MESSAGE.summary,
    contentType: "application/json",
    payload: payload(OUTCOME_MESSAGE.name),
  };
  channels.outcomes = {
    address: outcomeSubject(PREFIX, "{tenantId}"),
    description:
      "Outcomes of the tenant's commands sent with the header Timer-Confirm: 1, one per command once its batch committed or it was rejected; core NATS (in no stream): subscribe before sending.",
    parameters: { tenantId: ref("#/components/parameters/tenantId") },
    messages: { [OUTCOME_MESSAGE.name]: ref(`#/components/messages/${OUTCOME_MESSAGE.name}`) },
  };
  operations[`send${OUTCOME_MESSAGE.name}`] = {
    action: "send",
    summary: OUTCOME_MESSAGE.summary,
    channel: ref("#/channels/outcomes"),
    messages: [ref(`#/channels/outcomes/messages/${OUTCOME_MESSAGE.name}`)],
  };

  messages[QUERY_ERROR_MESSAGE.name] = {
    name: QUERY_ERROR_MESSAGE.name,
    title: QUERY_ERROR_MESSAGE.name,
    summary: "An error reply: malformed request (400) or a failure of the service.",
    contentType: "application/json",
    headers: ref("#/components/schemas/QueryErrorHeaders"),
    payload: payload(QUERY_ERROR_MESSAGE.name),
  };
  for (const q of QUERY_MESSAGES) {
    const id = channelId("query", q.endpoint);
    const replyId = `${id}Reply`;
    for (const m of [q.request, q.reply]) {
      messages[m.name] = { name: m.name, title: m.name, contentType: "application/json", payload: payload(m.name) };
    }
    channels[id] = {
      address: querySubject(PREFIX, q.endpoint, "{tenantId}"),
      description: `The ${q.endpoint} endpoint of the NATS micro service timer-service (request/reply, in no stream). ${q.summary}`,
      parameters: { tenantId: ref("#/components/parameters/tenantId") },
      messages: { [q.request.name]: ref(`#/components/messages/${q.request.name}`) },
    };
    channels[replyId] = {
      address: null,
      description: `Replies of the ${q.endpoint} query, sent to the requester's reply subject (inbox).`,
      messages: {
        [q.reply.name]: ref(`#/components/messages/${q.reply.name}`),
        [QUERY_ERROR_MESSAGE.name]: ref(`#/components/messages/${QUERY_ERROR_MESSAGE.name}`),
      },
    };
    operations[`${q.endpoint}Query`] = {
      action: "receive",
      summary: q.summary,
      channel: ref(`#/channels/${id}`),
      messages: [ref(`#/channels/${id}/messages/${q.request.name}`)],
      reply: {
        channel: ref(`#/channels/${replyId}`),
        messages: [
          ref(`#/channels/${replyId}/messages/${q.reply.name}`),
          ref(`#/channels/${replyId}/messages/${QUERY_ERROR_MESSAGE.name}`),
        ],
      },
    };
  }

  return {
    asyncapi: "3.0.0",
    info: {
      title: "timer-service",
      version,
      description:
        "Durable timers over NATS JetStream: commands in on timer.commands.*.{tenantId}, events out on timer.events.*.{tenantId}, queries as the NATS micro service timer-service. The message schemas are in schemas/ (JSON Schema 2020-12). The contract is docs/design/contract.md; docs/design/messages.md restates it for users, with examples, and docs/design/message-schemas.md says how the schemas are made and where they are looser than the service.",
    },
    defaultContentType: "application/json",
    servers: {
      local: {
        host: "127.0.0.1:4222",
        protocol: "nats",
        description:
          "NATS with JetStream; streams TIMER_COMMANDS (timer.commands.>) and TIMER_EVENTS (timer.events.>). The service stores commands partitioned by tenant under timer.tenant-commands.{partition}.{kind}.{tenantId} (a subject transform of TIMER_COMMANDS); producers publish on timer.commands.{kind}.{tenantId} and see nothing of it (docs/design/messages.md §2).",
      },
    },
    channels,
    operations,
    components: { schemas: HEADERS, parameters: TENANT_ID_PARAMETER, messages },
  };
}
