import { connect, headers as natsHeaders, type NatsConnection, type NodeConnectionOptions, type Status } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, JetStreamApiError, type JetStreamClient } from "@nats-io/jetstream";
import { consumeEvents } from "./event-consumer.js";
import { MESSAGE_SCHEMAS } from "./message-schemas.js";
import { schemaProblem, type Schema } from "./schema-check.js";
import { cronProblem } from "./cron-check.js";
import { fromNatsError, TimerClientError, TimerRejectedError } from "./timer-client-error.js";
import { CommandOutcomes } from "./command-outcomes.js";
import { instantMessage, instantProblem, INSTANT_FORMAT } from "./instant-check.js";
import type {
  CommandEnvelope,
  CommandOptions,
  CommandOutcome,
  ConfirmedResult,
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
  TimerWithHistory,
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
  /** How long a command sent with `confirm: true` waits for its outcome after it is stored; default 5000 ms. */
  confirmTimeoutMs?: number;
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
  const { tenantId, subjectPrefix = "timer", eventsStream = "TIMER_EVENTS", timeoutMs = 5000, confirmTimeoutMs = 5000 } = options;
  if (tenantId === undefined || tenantId === null) throw new TimerClientError("INVALID_INPUT", `tenantId is required: ${TENANT_FORMAT}`);
  const tenantProblem = schemaProblem(bundledSchema("CancelTimer").properties.tenantId as Schema, tenantId, "/tenantId");
  if (tenantProblem !== undefined)
    throw new TimerClientError("INVALID_INPUT", `tenantId ${JSON.stringify(tenantId)} is not valid: ${TENANT_FORMAT}`);
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(subjectPrefix))
    throw new TimerClientError("INVALID_INPUT", "subjectPrefix must match ^[A-Za-z0-9_-]{1,32}$");
  if (!Number.isSafeInteger(confirmTimeoutMs) || confirmTimeoutMs < 1)
    throw new TimerClientError("INVALID_INPUT", `confirmTimeoutMs must be a whole number of milliseconds ≥ 1, e.g. 5000`);
  let nc: NatsConnection;
  let owned = false;
  if ("nc" in options) {
    nc = options.nc;
  } else {
    const { tenantId: _t, subjectPrefix: _p, eventsStream: _e, timeoutMs: _m, confirmTimeoutMs: _c, ...connectionOptions } = options;
    try {
      nc = await connect(connectionOptions);
    } catch (error) {
      throw fromNatsError(error, `connecting to NATS at ${[connectionOptions.servers].flat().join(", ")}`);
    }
    owned = true;
  }
  return new TimerClient(nc, owned, { tenantId, subjectPrefix, eventsStream, timeoutMs, confirmTimeoutMs });
}

function bundledSchema(type: string): Schema & { properties: Record<string, Schema> } {
  const schema = MESSAGE_SCHEMAS[type];
  if (schema === undefined) throw new Error(`no bundled schema ${type}`);
  return schema as Schema & { properties: Record<string, Schema> };
}

/** A Date or an ISO 8601 string as the wire's string; refuses a date that does not exist, naming `member`. */
function instant(value: Date | string, member: string, doing: string): string {
  if (typeof value === "string") {
    const problem = instantProblem(value);
    if (problem === undefined) return value;
    const detail = instantMessage(member, value, problem);
    throw new TimerClientError("INVALID_INPUT", `${doing} ${detail}`, { detail });
  }
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
    const detail = `${member}: must be a valid Date or ${INSTANT_FORMAT}`;
    throw new TimerClientError("INVALID_INPUT", `${doing} ${detail}`, { detail });
  }
  return value.toISOString();
}

/** `nats://host:port` of the server a connection is (or was last) connected to. */
function serverUrlOf(nc: NatsConnection): string {
  const server = nc.getServer();
  return /^[a-z]+:\/\//.test(server) ? server : `nats://${server}`;
}

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
  private readonly outcomes: CommandOutcomes;
  private closed = false;
  /** False between a disconnect and the reconnect: a send then fails at once, naming the server. */
  private connected = true;
  /** The connection's status events while the client is open; a connection the caller owns outlives the client. */
  private readonly statuses: AsyncIterable<Status>;

  /** @internal use connectTimerClient */
  constructor(
    /** The NATS connection (owned by the client when it made it). */
    readonly connection: NatsConnection,
    private readonly owned: boolean,
    readonly options: Required<CommonOptions>,
  ) {
    this.js = jetstream(connection, { timeout: options.timeoutMs });
    this.outcomes = new CommandOutcomes(connection, `${options.subjectPrefix}.outcomes.${options.tenantId}`);
    this.statuses = connection.status();
    void this.followStatus();
  }

  private async followStatus(): Promise<void> {
    for await (const status of this.statuses) {
      if (status.type === "disconnect") this.connected = false;
      else if (status.type === "reconnect") this.connected = true;
    }
  }

  get tenantId(): string {
    return this.options.tenantId;
  }

  /**
   * Creates or reschedules the timer `serviceCallId`. An id is used once: once its timer has fired
   * (or ended Missed, Completed, Failed, TimedOut) a newer schedule of it is rejected `TIMER_FINAL`
   * (see `consume({ kinds: ["rejected"] })`); use a new serviceCallId per timer, e.g. "order-42-reminder".
   * Throws `INVALID_INPUT` before sending for what the service would reject (the schema, a date
   * that does not exist, the cron rule, the time zone). With `confirm: true` it resolves with the
   * service's outcome (CONTRACT §19).
   */
  schedule(input: ScheduleInput & { confirm: true }): Promise<ConfirmedResult>;
  schedule(input: ScheduleInput): Promise<SendResult>;
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
      dueAt: dueAt === undefined || dueAt === null ? dueAt : instant(dueAt, "/payload/dueAt", "ScheduleTimer"),
      data,
      repeat:
        repeat === undefined || repeat === null
          ? repeat
          : defined({
              ...repeat,
              until: repeat.until === undefined ? undefined : instant(repeat.until, "/payload/repeat/until", "ScheduleTimer"),
            }),
      maxLatenessMs,
      delivery,
      createdBy,
      createdVia,
    });
    return this.send("schedule", "ScheduleTimer", payload, command);
  }

  /** Cancels the timer; a cancel of an unknown key keeps an older schedule from creating it later. */
  cancel(serviceCallId: string, options: CommandOptions & { confirm: true }): Promise<ConfirmedResult>;
  cancel(serviceCallId: string, options?: CommandOptions): Promise<SendResult>;
  cancel(serviceCallId: string, options: CommandOptions = {}): Promise<SendResult> {
    return this.send("cancel", "CancelTimer", { serviceCallId }, options);
  }

  /** Cancels every timer of the tenant whose serviceCallId starts with `serviceCallIdPrefix`. */
  cancelPrefix(serviceCallIdPrefix: string, options: CommandOptions & { confirm: true }): Promise<ConfirmedResult>;
  cancelPrefix(serviceCallIdPrefix: string, options?: CommandOptions): Promise<SendResult>;
  cancelPrefix(serviceCallIdPrefix: string, options: CommandOptions = {}): Promise<SendResult> {
    return this.send("cancelprefix", "CancelTimersByPrefix", { serviceCallIdPrefix }, options);
  }

  /** The same as `cancelPrefix`. */
  cancelByPrefix(serviceCallIdPrefix: string, options: CommandOptions & { confirm: true }): Promise<ConfirmedResult>;
  cancelByPrefix(serviceCallIdPrefix: string, options?: CommandOptions): Promise<SendResult>;
  cancelByPrefix(serviceCallIdPrefix: string, options: CommandOptions = {}): Promise<SendResult> {
    return this.cancelPrefix(serviceCallIdPrefix, options);
  }

  /** Re-arms a Failed, TimedOut or Missed timer to fire at once (ignored in other states). */
  retry(serviceCallId: string, options: CommandOptions & { confirm: true }): Promise<ConfirmedResult>;
  retry(serviceCallId: string, options?: CommandOptions): Promise<SendResult>;
  retry(serviceCallId: string, options: CommandOptions = {}): Promise<SendResult> {
    return this.send("retry", "RetryTimer", { serviceCallId }, options);
  }

  /** Reports the work of a Fired timer (one with `delivery`) as done. */
  complete(serviceCallId: string, result: string | undefined, options: CommandOptions & { confirm: true }): Promise<ConfirmedResult>;
  complete(serviceCallId: string, result?: string, options?: CommandOptions): Promise<SendResult>;
  complete(serviceCallId: string, result?: string, options: CommandOptions = {}): Promise<SendResult> {
    return this.send("complete", "TimerCompleted", defined({ serviceCallId, result }), options);
  }

  /** Reports the work of a Fired timer as failed: it is published again while attempts remain. */
  fail(serviceCallId: string, reason: string, options: CommandOptions & { confirm: true }): Promise<ConfirmedResult>;
  fail(serviceCallId: string, reason: string, options?: CommandOptions): Promise<SendResult>;
  fail(serviceCallId: string, reason: string, options: CommandOptions = {}): Promise<SendResult> {
    return this.send("fail", "TimerFailed", { serviceCallId, reason }, options);
  }

  /**
   * The timer, or null when the service knows no timer of that key. With `history: true` the
   * timer and its history, oldest first (CONTRACT §19).
   */
  get(serviceCallId: string, options: { history: true }): Promise<TimerWithHistory>;
  get(serviceCallId: string, options?: { history?: boolean }): Promise<Timer | null>;
  async get(serviceCallId: string, options: { history?: boolean } = {}): Promise<Timer | null | TimerWithHistory> {
    if (options.history === true) return this.getHistory(serviceCallId);
    const reply = await this.query<{ timer: Timer | null }>("get", "GetTimerRequest", { serviceCallId });
    return reply.timer;
  }

  /** The timer (null when unknown) and its history, oldest first: what reached it, when it fired, and why not. */
  async getHistory(serviceCallId: string): Promise<TimerWithHistory> {
    const reply = await this.query<{ timer: Timer | null; history?: TimerWithHistory["history"] }>(
      "get",
      "GetTimerRequest",
      { serviceCallId },
      { history: true },
    );
    if (!Array.isArray(reply.history))
      throw new TimerClientError("SERVICE_ERROR", "query get: the reply has no history (a service older than CONTRACT v5?)", {
        detail: "the reply has no history",
      });
    return { timer: reply.timer, history: reply.history };
  }

  /** One page of timers ordered by (dueAt, serviceCallId); pass `nextCursor` back as `cursor` for the next. */
  async list(query: ListQuery = {}): Promise<TimerPage> {
    const { dueAfter, dueBefore, ...rest } = query;
    const at = (value: Date | string | null | undefined, member: string) =>
      value === undefined || value === null ? value : instant(value, member, "list");
    const request = defined({
      ...rest,
      dueAfter: at(dueAfter, "/dueAfter"),
      dueBefore: at(dueBefore, "/dueBefore"),
      ...(typeof rest.changedSince === "string" ? { changedSince: at(rest.changedSince, "/changedSince") } : {}),
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

  /**
   * Deletes the durable consumer `durable` of the events stream (one `consume` made), so the
   * broker stops keeping events for it; false when there was none. Stop its subscription first.
   */
  async removeConsumer(durable: string): Promise<boolean> {
    this.assertOpen();
    try {
      return await (await jetstreamManager(this.connection)).consumers.delete(this.options.eventsStream, durable);
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === 10014) return false; // consumer not found
      throw fromNatsError(error, `removing consumer ${durable}`);
    }
  }

  /** Stops every consumer of this client and, when the client made the connection, drains and closes it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.outcomes.close();
    // nats.js hands out a QueuedIterator; stopping it removes its listener from the connection.
    (this.statuses as { stop?: () => void }).stop?.();
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
    if (options.confirm === true) h.set("Timer-Confirm", "1");
    const id = envelope.id as string;
    const subject = `${subjectPrefix}.commands.${token}.${tenantId}`;
    this.assertConnected(`publishing ${type}`, "the command was not sent");
    let awaited: ReturnType<CommandOutcomes["expect"]> | undefined;
    if (options.confirm === true) {
      try {
        await this.outcomes.ready();
      } catch (error) {
        throw fromNatsError(error, `subscribing to the outcomes of ${tenantId}`);
      }
      awaited = this.outcomes.expect(id);
      // A rejection before it is awaited (the publish failed) must not be reported as unhandled.
      awaited.outcome.catch(() => undefined);
    }
    let sent: SendResult;
    try {
      const ack = await this.js.publish(subject, body, { msgID: id, headers: h, timeout: this.options.timeoutMs });
      sent = {
        commandId: id,
        duplicate: ack.duplicate,
        command: envelope as unknown as CommandEnvelope,
        subject,
        stream: ack.stream,
        seq: ack.seq,
      };
    } catch (error) {
      awaited?.forget();
      throw this.publishFailure(error, type, subject);
    }
    return awaited === undefined ? sent : this.confirmed(sent, awaited);
  }

  private assertConnected(doing: string, consequence: string): void {
    if (!this.connected) throw this.notConnected(doing, consequence);
  }

  /** The NOT_CONNECTED error of `doing` while the connection is down, and what follows from it. */
  private notConnected(doing: string, consequence: string, cause?: unknown): TimerClientError {
    const detail = `not connected to ${serverUrlOf(this.connection)} (the connection was lost; reconnecting)`;
    return new TimerClientError("NOT_CONNECTED", `${doing}: ${detail}: ${consequence}`, {
      detail,
      ...(cause === undefined ? {} : { cause }),
    });
  }

  private publishFailure(error: unknown, type: string, subject: string): TimerClientError {
    const { subjectPrefix } = this.options;
    const failure = fromNatsError(error, `publishing ${type}`);
    if (failure.code === "TIMEOUT" && !this.connected) {
      return this.notConnected(
        `publishing ${type}`,
        "the command may still be stored when the connection returns (re-sending it with the same id is safe)",
        error,
      );
    }
    if (failure.code !== "NO_RESPONDERS") return failure;
    const detail = `no stream stores ${subject}: the timer service has not created its streams on ${serverUrlOf(this.connection)} yet (start the service once, or check subjectPrefix "${subjectPrefix}")`;
    return new TimerClientError("NO_RESPONDERS", `publishing ${type}: ${detail}`, { cause: error, detail });
  }

  /** Waits for the outcome of a stored command: applied or ignored resolve, rejected throws. */
  private async confirmed(sent: SendResult, awaited: ReturnType<CommandOutcomes["expect"]>): Promise<ConfirmedResult> {
    const { confirmTimeoutMs, tenantId } = this.options;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        awaited.forget();
        const serviceCallId = sent.command.payload.serviceCallId;
        const look =
          typeof serviceCallId === "string"
            ? `get(${JSON.stringify(serviceCallId)}), or timer-client get --tenant ${tenantId} --id ${JSON.stringify(serviceCallId)}`
            : `list({ serviceCallIdPrefix: ${JSON.stringify(sent.command.payload.serviceCallIdPrefix)} })`;
        const detail = `no outcome within ${confirmTimeoutMs} ms; the command is stored (stream ${sent.stream}, seq ${sent.seq}) and may still be applied: look with ${look}`;
        reject(new TimerClientError("NO_OUTCOME", `${sent.command.type} ${sent.commandId}: ${detail}`, { detail }));
      }, confirmTimeoutMs);
    });
    let outcome: CommandOutcome;
    try {
      outcome = await Promise.race([awaited.outcome, timeout]);
    } finally {
      clearTimeout(timer);
    }
    if (outcome.outcome === "rejected") {
      throw new TimerRejectedError(outcome.code ?? "REJECTED", outcome.reason, outcome.commandId, outcome.serviceCallId);
    }
    const { type: _type, ...rest } = outcome;
    return { ...sent, ...rest, outcome: outcome.outcome };
  }

  /** `extra` is sent beside the checked request: members newer than the bundled schema. */
  private async query<T>(endpoint: string, schemaName: string, request: Record<string, unknown>, extra: object = {}): Promise<T> {
    this.assertOpen();
    const problem = schemaProblem(bundledSchema(schemaName), request);
    if (problem !== undefined) throw new TimerClientError("INVALID_INPUT", `${endpoint} ${problem}`, { detail: problem });
    const { tenantId, subjectPrefix, timeoutMs } = this.options;
    const subject = `${subjectPrefix}.query.${endpoint}.${tenantId}`;
    this.assertConnected(`query ${endpoint}`, "nothing was asked");
    let reply;
    try {
      reply = await this.connection.request(subject, encoder.encode(JSON.stringify({ ...request, ...extra })), { timeout: timeoutMs });
    } catch (error) {
      const failure = fromNatsError(error, `query ${endpoint}`);
      if (failure.code !== "NO_RESPONDERS" && failure.code !== "TIMEOUT") throw failure;
      const detail = `${failure.code === "TIMEOUT" ? "no answer in time" : "no responders"} on ${subject} at ${serverUrlOf(this.connection)} (is the timer service running there?)`;
      throw new TimerClientError(failure.code, `query ${endpoint}: ${detail}`, { cause: error, detail });
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
      throw new TimerClientError("SERVICE_ERROR", `query ${endpoint}: the reply is not a JSON object`, {
        detail: "the reply is not a JSON object",
      });
    return body as T;
  }
}
