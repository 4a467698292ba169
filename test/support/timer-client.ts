import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { eventHeaderProblems, schemaProblems } from "./message-schemas.js";

/** A message the service published, as a subscriber sees it. */
export interface ReceivedEvent {
  readonly subject: string;
  readonly msgId: string | undefined;
  readonly body: Record<string, any>;
  readonly receivedAtMs: number;
  /** The W3C trace headers the event came with (CONTRACT §13). */
  readonly traceparent?: string | undefined;
  readonly tracestate?: string | undefined;
}

let commandCounter = 0;

/**
 * A producer and subscriber of timer messages, as other services are: it publishes commands with
 * JetStream and collects the service's events from a core subscription on `{prefix}.events.>`.
 */
export class TimerClient {
  readonly events: ReceivedEvent[] = [];
  /** Events (or their headers) that do not match their published schema (schemas/, asyncapi.yaml); `close` fails when there are any. */
  readonly schemaViolations: string[] = [];
  private waiters: { predicate: (e: ReceivedEvent) => boolean; resolve: (e: ReceivedEvent) => void }[] = [];
  private readonly js: JetStreamClient;

  private constructor(
    readonly connection: NatsConnection,
    private readonly subscription: Subscription,
    readonly prefix: string,
  ) {
    this.js = jetstream(connection);
    void this.collect();
  }

  static async connect(url: string | readonly string[], prefix = "timer"): Promise<TimerClient> {
    const connection = await connect({
      servers: typeof url === "string" ? url : [...url],
      maxReconnectAttempts: -1,
      reconnectTimeWait: 100,
      waitOnFirstConnect: true,
    });
    const subscription = connection.subscribe(`${prefix}.events.>`);
    await connection.flush();
    return new TimerClient(connection, subscription, prefix);
  }

  private async collect(): Promise<void> {
    for await (const message of this.subscription) {
      let body: Record<string, any>;
      try {
        body = message.json();
      } catch {
        body = { unparsable: message.string() };
      }
      const event: ReceivedEvent = {
        subject: message.subject,
        msgId: message.headers?.get("Nats-Msg-Id") || undefined,
        body,
        receivedAtMs: Date.now(),
        traceparent: message.headers?.get("traceparent") || undefined,
        tracestate: message.headers?.get("tracestate") || undefined,
      };
      this.events.push(event);
      const problems = [...schemaProblems(body), ...eventHeaderProblems(presentHeaders(event))];
      if (problems.length > 0)
        this.schemaViolations.push(`${message.subject}: ${problems.join("; ")} in ${message.string().slice(0, 300)}`);
      this.waiters = this.waiters.filter((waiter) => {
        if (!waiter.predicate(event)) return true;
        waiter.resolve(event);
        return false;
      });
    }
  }

  /** Publishes raw bytes or text on a subject with JetStream and waits for the stream's ack. */
  async publishRaw(subject: string, body: string | Uint8Array): Promise<void> {
    await this.js.publish(subject, typeof body === "string" ? new TextEncoder().encode(body) : body);
  }

  /** Publishes a ScheduleTimer envelope; returns the envelope sent. */
  async schedule(
    tenantId: string,
    serviceCallId: string,
    dueAt: string | Date,
    options: { data?: unknown; correlationId?: string; timestampMs?: number; id?: string } = {},
  ): Promise<Record<string, unknown>> {
    const envelope = {
      id: options.id ?? `cmd-${++commandCounter}`,
      type: "ScheduleTimer",
      tenantId,
      ...(options.correlationId === undefined ? {} : { correlationId: options.correlationId }),
      timestampMs: options.timestampMs ?? Date.now(),
      payload: {
        tenantId,
        serviceCallId,
        dueAt: typeof dueAt === "string" ? dueAt : dueAt.toISOString(),
        ...(options.data === undefined ? {} : { data: options.data }),
      },
    };
    await this.publishRaw(`${this.prefix}.commands.schedule.${tenantId}`, JSON.stringify(envelope));
    return envelope;
  }

  /** Publishes a CancelTimer envelope. */
  async cancel(
    tenantId: string,
    serviceCallId: string,
    options: { timestampMs?: number; id?: string; correlationId?: string } = {},
  ): Promise<void> {
    const envelope = {
      id: options.id ?? `cmd-${++commandCounter}`,
      type: "CancelTimer",
      tenantId,
      ...(options.correlationId === undefined ? {} : { correlationId: options.correlationId }),
      timestampMs: options.timestampMs ?? Date.now(),
      payload: { tenantId, serviceCallId },
    };
    await this.publishRaw(`${this.prefix}.commands.cancel.${tenantId}`, JSON.stringify(envelope));
  }

  /** Resolves with the first event (already received or arriving) that matches. */
  waitFor(predicate: (e: ReceivedEvent) => boolean, timeoutMs = 15_000): Promise<ReceivedEvent> {
    const found = this.events.find(predicate);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const waiter = { predicate, resolve: (e: ReceivedEvent) => (clearTimeout(timer), resolve(e)) };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`no matching event within ${timeoutMs} ms; received ${this.events.length} events`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** Waits for the DueTimeReached of one timer. */
  waitForDue(tenantId: string, serviceCallId: string, timeoutMs?: number): Promise<ReceivedEvent> {
    return this.waitFor(
      (e) => e.body.type === "DueTimeReached" && e.body.payload?.tenantId === tenantId && e.body.payload?.serviceCallId === serviceCallId,
      timeoutMs,
    );
  }

  /** Waits for the CommandRejected whose payload.subject is `subject`. */
  waitForRejection(subject: string, timeoutMs?: number): Promise<ReceivedEvent> {
    return this.waitFor((e) => e.body.type === "CommandRejected" && e.body.payload?.subject === subject, timeoutMs);
  }

  /** Events of one type received so far, optionally for one serviceCallId. */
  received(type: string, serviceCallId?: string): ReceivedEvent[] {
    return this.events.filter(
      (e) => e.body.type === type && (serviceCallId === undefined || e.body.payload?.serviceCallId === serviceCallId),
    );
  }

  async close(): Promise<void> {
    await this.connection.close();
    if (this.schemaViolations.length > 0) {
      throw new Error(
        `${this.schemaViolations.length} event(s) do not match the published schemas:\n${this.schemaViolations.slice(0, 5).join("\n")}`,
      );
    }
  }
}

/** The headers an event came with, as the AsyncAPI document names them. */
function presentHeaders(event: ReceivedEvent): Record<string, string> {
  const present: Record<string, string> = {};
  if (event.msgId !== undefined) present["Nats-Msg-Id"] = event.msgId;
  if (event.traceparent !== undefined) present.traceparent = event.traceparent;
  if (event.tracestate !== undefined) present.tracestate = event.tracestate;
  return present;
}
