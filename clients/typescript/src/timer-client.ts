import { connect, headers as natsHeaders, type NatsConnection, type NodeConnectionOptions } from "@nats-io/transport-node";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { consumeEvents } from "./event-consumer.js";
import { MESSAGE_SCHEMAS } from "./message-schemas.js";
import { schemaProblem, type Schema } from "./schema-check.js";
import { cronProblem } from "./cron-check.js";
import { fromNatsError, TimerClientError } from "./timer-client-error.js";
import type {
  CommandEnvelope,
  CommandOptions,
  ConsumeOptions,
  EventKind,
  EventSubscription,
  ListQuery,
  ScheduleInput,
  SendResult,
  Timer,
  TimerEvent,
  TimerPage,
  TimerStats,
} from "./types.js";

interface CommonOptions {
  /** The tenant every command, query and consumer of this client is for. */
  tenantId: string;
  /** The first subject token (the service's TIMER_SUBJECT_PREFIX); default `timer`. */
  subjectPrefix?: string;
  /** The stream of the events (TIMER_EVENTS_STREAM); default `TIMER_EVENTS`. */
  eventsStream?: string;
  /** How long a publish ack or a query reply may take; default 5000 ms. */
  timeoutMs?: number;
}

/** Connect with the nats.js options (`servers`, `user`, `pass`, `token`, `tls`, …), or pass a connection (`nc`) the caller keeps. */
export type TimerClientOptions = CommonOptions & ({ nc: NatsConnection } | (NodeConnectionOptions & { servers: string | string[] }));

const TENANT_FORMAT = 'a tenant id is 1 to 64 letters, digits, "_" or "-", starting with a letter or digit, e.g. "acme"';
const CRON_FORMAT = '5 fields "minute hour day-of-month month day-of-week", e.g. "0 9 * * 1-5" (09:00 on weekdays)';
const EVENT_KINDS: readonly EventKind[] = ["due", "missed", "rejected"];
const MAX_DATA_BYTES = 16_384;
const MAX_COMMAND_BYTES = 64 * 1024;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Connects (or takes `nc`) and returns a client for one tenant. */
export async function connectTimerClient(options: TimerClientOptions): Promise<TimerClient> {
  const { tenantId, subjectPrefix = "timer", eventsStream = "TIMER_EVENTS", timeoutMs = 5000 } = options;
  if (tenantId === undefined || tenantId === null) throw new TimerClientError("INVALID_INPUT", `tenantId is required: ${TENANT_FORMAT}`);
  const tenantProblem = schemaProblem(bundledSchema("CancelTimer").properties.tenantId as Schema, tenantId, "/tenantId");
  if (tenantProblem !== undefined)
    throw new TimerClientError("INVALID_INPUT", `tenantId ${JSON.stringify(tenantId)} is not valid: ${TENANT_FORMAT}`);
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(subjectPrefix))
    throw new TimerClientError("INVALID_INPUT", "subjectPrefix must match ^[A-Za-z0-9_-]{1,32}$");
  let nc: NatsConnection;
  let owned = false;
  if ("nc" in options) {
    nc = options.nc;
  } else {
    const { tenantId: _t, subjectPrefix: _p, eventsStream: _e, timeoutMs: _m, ...connectionOptions } = options;
    try {
      nc = await connect(connectionOptions);
    } catch (error) {
      throw fromNatsError(error, `connecting to NATS at ${[connectionOptions.servers].flat().join(", ")}`);
    }
    owned = true;
  }
  return new TimerClient(nc, owned, { tenantId, subjectPrefix, eventsStream, timeoutMs });
}

function bundledSchema(type: string): Schema & { properties: Record<string, Schema> } {
  const schema = MESSAGE_SCHEMAS[type];
  if (schema === undefined) throw new Error(`no bundled schema ${type}`);
  return schema as Schema & { properties: Record<string, Schema> };
}

const instant = (value: Date | string): string => {
  if (typeof value === "string") return value;
  if (!(value instanceof Date) || Number.isNaN(value.getTime()))
    throw new TimerClientError("INVALID_INPUT", "a date must be a valid Date or an ISO 8601 string");
  return value.toISOString();
};

/** 16 random bytes as 32 hex digits. */
export function randomCommandId(): string {
  return Array.from(globalThis.crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Members whose value is undefined are left out, as JSON would. */
function defined(object: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(object).filter(([, v]) => v !== undefined));
}

/**
 * A client of the timer service for one tenant. Every command resolves once the commands stream
 * has stored it (publish ack) and is refused before sending when it does not match the service's
 * schema; queries use the service's NATS micro endpoints.
 */
export class TimerClient {
  private readonly js: JetStreamClient;
  private readonly subscriptions = new Set<EventSubscription>();
  private closed = false;

  /** @internal use connectTimerClient */
  constructor(
    /** The NATS connection (owned by the client when it made it). */
    readonly connection: NatsConnection,
    private readonly owned: boolean,
    readonly options: Required<CommonOptions>,
  ) {
    this.js = jetstream(connection, { timeout: options.timeoutMs });
  }

  get tenantId(): string {
    return this.options.tenantId;
  }

  /**
   * Creates or reschedules the timer `serviceCallId`. An id is used once: once its timer has fired
   * (or ended Missed, Completed, Failed, TimedOut) a newer schedule of it is rejected `TIMER_FINAL`
   * (see `consume({ kinds: ["rejected"] })`); use a new serviceCallId per timer, e.g. "order-42-reminder".
   * Throws `INVALID_INPUT` before sending for what the service would reject (the schema, the cron rule, the time zone).
   */
  async schedule(input: ScheduleInput): Promise<SendResult> {
    const { serviceCallId, dueAt, data, repeat, maxLatenessMs, delivery, createdBy, createdVia, ...command } = input;
    if (data !== undefined && data !== null) {
      let text: string | undefined;
      try {
        text = JSON.stringify(data);
      } catch (error) {
        throw new TimerClientError("INVALID_INPUT", `/payload/data: not JSON (${String(error)})`);
      }
      if (text === undefined) throw new TimerClientError("INVALID_INPUT", "/payload/data: not a JSON value");
      if (encoder.encode(text).byteLength > MAX_DATA_BYTES)
        throw new TimerClientError("INVALID_INPUT", `/payload/data: over ${MAX_DATA_BYTES} bytes as JSON`);
    }
    if (repeat !== undefined && repeat !== null && typeof repeat.cron === "string") {
      const timezone = typeof repeat.timezone === "string" ? repeat.timezone : "UTC";
      const problem = cronProblem(repeat.cron, timezone);
      if (problem !== undefined) {
        const valid = problem.field === "cron" ? CRON_FORMAT : 'an IANA time zone, e.g. "Europe/Berlin" or "UTC"';
        const detail = `/payload/repeat/${problem.field}: ${problem.reason}; a valid value is ${valid}`;
        throw new TimerClientError("INVALID_INPUT", `ScheduleTimer ${detail}`, { detail });
      }
    }
    const payload = defined({
      serviceCallId,
      dueAt: instant(dueAt),
      data,
      repeat:
        repeat === undefined ? undefined : defined({ ...repeat, until: repeat.until === undefined ? undefined : instant(repeat.until) }),
      maxLatenessMs,
      delivery,
      createdBy,
      createdVia,
    });
    return this.send("schedule", "ScheduleTimer", payload, command);
  }

  /** Cancels the timer; a cancel of an unknown key keeps an older schedule from creating it later. */
  cancel(serviceCallId: string, options: CommandOptions = {}): Promise<SendResult> {
    return this.send("cancel", "CancelTimer", { serviceCallId }, options);
  }

  /** Cancels every timer of the tenant whose serviceCallId starts with `serviceCallIdPrefix`. */
  cancelByPrefix(serviceCallIdPrefix: string, options: CommandOptions = {}): Promise<SendResult> {
    return this.send("cancelprefix", "CancelTimersByPrefix", { serviceCallIdPrefix }, options);
  }

  /** Re-arms a Failed, TimedOut or Missed timer to fire at once (ignored in other states). */
  retry(serviceCallId: string, options: CommandOptions = {}): Promise<SendResult> {
    return this.send("retry", "RetryTimer", { serviceCallId }, options);
  }

  /** Reports the work of a Fired timer (one with `delivery`) as done. */
  complete(serviceCallId: string, result?: string, options: CommandOptions = {}): Promise<SendResult> {
    return this.send("complete", "TimerCompleted", defined({ serviceCallId, result }), options);
  }

  /** Reports the work of a Fired timer as failed: it is published again while attempts remain. */
  fail(serviceCallId: string, reason: string, options: CommandOptions = {}): Promise<SendResult> {
    return this.send("fail", "TimerFailed", { serviceCallId, reason }, options);
  }

  /** The timer, or null when the service knows no timer of that key. */
  async get(serviceCallId: string): Promise<Timer | null> {
    const reply = await this.query<{ timer: Timer | null }>("get", "GetTimerRequest", { serviceCallId });
    return reply.timer;
  }

  /** One page of timers ordered by (dueAt, serviceCallId); pass `nextCursor` back as `cursor` for the next. */
  async list(query: ListQuery = {}): Promise<TimerPage> {
    const { dueAfter, dueBefore, ...rest } = query;
    const request = defined({
      ...rest,
      dueAfter: dueAfter === undefined ? undefined : instant(dueAfter),
      dueBefore: dueBefore === undefined ? undefined : instant(dueBefore),
    });
    return this.query<TimerPage>("list", "ListTimersRequest", request);
  }

  /** Counts of the tenant's timers by state. */
  stats(): Promise<TimerStats> {
    return this.query<TimerStats>("stats", "TimerStatsRequest", {});
  }

  /**
   * Reads the tenant's events through a durable consumer: the handler gets each event (the envelope
   * plus headers); it is acked when the handler resolves and redelivered with a growing delay when
   * it throws. A redelivered event already handled within `dedupeWindowMs` is acked unhandled.
   */
  async consume(options: ConsumeOptions, handler: (event: TimerEvent) => Promise<void> | void): Promise<EventSubscription> {
    this.assertOpen();
    const kinds = options.kinds ?? ["due", "missed"];
    if (options.durable === undefined)
      throw new TimerClientError("INVALID_INPUT", 'durable is required: a consumer name such as "billing"');
    if (!/^[A-Za-z0-9_-]{1,255}$/.test(options.durable))
      throw new TimerClientError("INVALID_INPUT", 'durable must be 1 to 255 letters, digits, "_" or "-", e.g. "billing"');
    if (!Array.isArray(kinds) || kinds.length === 0 || kinds.some((k) => !EVENT_KINDS.includes(k)))
      throw new TimerClientError(
        "INVALID_INPUT",
        `kinds must be a non-empty list of ${EVENT_KINDS.map((k) => `"${k}"`).join(", ")}, e.g. ["due", "missed"]`,
      );
    const subscription = await consumeEvents(this.connection, { ...this.options, ...options, kinds }, handler, () =>
      this.subscriptions.delete(subscription),
    );
    this.subscriptions.add(subscription);
    return subscription;
  }

  /** Stops every consumer of this client and, when the client made the connection, drains and closes it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.subscriptions].map((s) => s.stop()));
    if (this.owned && !this.connection.isClosed()) {
      await this.connection.drain().catch(() => this.connection.close());
    }
  }

  private assertOpen(): void {
    if (this.closed || this.connection.isClosed()) throw new TimerClientError("CLOSED", "the client is closed");
  }

  private async send(token: string, type: string, payload: Record<string, unknown>, options: CommandOptions): Promise<SendResult> {
    this.assertOpen();
    const { tenantId, subjectPrefix } = this.options;
    const envelope = defined({
      // Random (128 bits), never derived from time or a counter: the id is also the stream's
      // Nats-Msg-Id, and one another tenant could guess would have this command dropped as a duplicate.
      id: options.id ?? randomCommandId(),
      type,
      tenantId,
      correlationId: options.correlationId,
      timestampMs: options.timestampMs ?? Date.now(),
      payload: { tenantId, ...payload },
    });
    const problem = schemaProblem(bundledSchema(type), envelope);
    if (problem !== undefined) throw new TimerClientError("INVALID_INPUT", `${type} ${problem}`, { detail: problem });
    const body = encoder.encode(JSON.stringify(envelope));
    if (body.byteLength > MAX_COMMAND_BYTES)
      throw new TimerClientError("INVALID_INPUT", `${type}: the message is over ${MAX_COMMAND_BYTES} bytes`);
    const h = natsHeaders();
    if (options.traceparent !== undefined) h.set("traceparent", options.traceparent);
    if (options.tracestate !== undefined) h.set("tracestate", options.tracestate);
    const id = envelope.id as string;
    const subject = `${subjectPrefix}.commands.${token}.${tenantId}`;
    try {
      const ack = await this.js.publish(subject, body, { msgID: id, headers: h, timeout: this.options.timeoutMs });
      return {
        commandId: id,
        duplicate: ack.duplicate,
        command: envelope as unknown as CommandEnvelope,
        subject,
        stream: ack.stream,
        seq: ack.seq,
      };
    } catch (error) {
      const failure = fromNatsError(error, `publishing ${type}`);
      if (failure.code !== "NO_RESPONDERS") throw failure;
      throw new TimerClientError(
        "NO_RESPONDERS",
        `publishing ${type}: no stream stores ${subject}: the timer service has not created its streams on this NATS server yet (start the service once, or check subjectPrefix "${subjectPrefix}")`,
        { cause: error },
      );
    }
  }

  private async query<T>(endpoint: string, schemaName: string, request: Record<string, unknown>): Promise<T> {
    this.assertOpen();
    const problem = schemaProblem(bundledSchema(schemaName), request);
    if (problem !== undefined) throw new TimerClientError("INVALID_INPUT", `${endpoint} ${problem}`, { detail: problem });
    const { tenantId, subjectPrefix, timeoutMs } = this.options;
    let reply;
    try {
      reply = await this.connection.request(`${subjectPrefix}.query.${endpoint}.${tenantId}`, encoder.encode(JSON.stringify(request)), {
        timeout: timeoutMs,
      });
    } catch (error) {
      throw fromNatsError(error, `query ${endpoint}`);
    }
    const status = reply.headers?.get("Nats-Service-Error-Code") ?? "";
    let body: unknown;
    try {
      body = JSON.parse(decoder.decode(reply.data));
    } catch {
      body = undefined;
    }
    if (status !== "") {
      const message =
        (body as { error?: { message?: string } } | undefined)?.error?.message ?? reply.headers?.get("Nats-Service-Error") ?? "error";
      throw new TimerClientError(status === "400" ? "INVALID_REQUEST" : "SERVICE_ERROR", `query ${endpoint}: ${message} (${status})`, {
        status: Number(status),
        detail: message,
      });
    }
    if (typeof body !== "object" || body === null)
      throw new TimerClientError("SERVICE_ERROR", `query ${endpoint}: the reply is not a JSON object`);
    return body as T;
  }
}
