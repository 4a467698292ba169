import { connect, nanos, type NatsConnection } from "@nats-io/transport-node";
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from "@nats-io/jetstream";

/** One `DueTimeReached` as stored in the events stream. */
export interface StreamedDueEvent {
  /** Stream sequence (restarts at 1 when the stream is recreated, see `epoch`). */
  readonly seq: number;
  /** 0 for the stream the reader first saw; +1 each time it found the stream recreated (empty store). */
  readonly epoch: number;
  /** Envelope id: `{tenantId}:{serviceCallId}:{dueAtMs}`. */
  readonly id: string;
  readonly msgId: string | undefined;
  readonly tenantId: string;
  readonly serviceCallId: string;
  readonly dueAtMs: number;
  readonly reachedAtMs: number;
  /** When the broker stored the message (its JetStream timestamp). */
  readonly storedAtMs: number;
  readonly data: unknown;
  /** A recurring timer's occurrence, and how many earlier ones it stands for (CONTRACT §10). */
  readonly occurrence: number | undefined;
  readonly missedOccurrences: number | undefined;
}

const FETCH_BATCH = 2_000;
const FETCH_EXPIRES_MS = 1_000;
const RETRY_MS = 100;
/**
 * A fetch must end by itself within its `expires`; one whose consumer lives on a cluster node that
 * went down and stays down never does (seen with @nats-io/jetstream 3.4), so after this long it is
 * stopped and the consumer recreated on a node that is up.
 */
const FETCH_STALL_MS = FETCH_EXPIRES_MS + 4_000;
/** While messages stream in, waiters are checked at most this often. */
const NOTIFY_EVERY_MS = 20;

/**
 * Reads `DueTimeReached` events from the events stream itself, not from a core subscription, so it
 * sees every event the broker stored even when the reader was disconnected (broker restart). It
 * uses its own ephemeral pull consumer (no acks) from the sequence after the last one it read, and
 * recreates it after any fault; sequences are checked to be contiguous, so a message lost on the
 * wire makes it re-read rather than miss. A stream recreated by the service after the broker lost
 * its store (new `created` time) is read from its start as a new `epoch`.
 */
export class EventStreamReader {
  readonly events: StreamedDueEvent[] = [];
  /** Events per `tenantId\0serviceCallId`. */
  private readonly byTimer = new Map<string, StreamedDueEvent[]>();
  private readonly envelopeIds = new Set<string>();
  private duplicateCount = 0;
  /** Times the stream's last sequence went below what had been read: the broker lost stored messages. */
  readonly lostTail: { readonly readUpTo: number; readonly lastSeqAfter: number }[] = [];
  private epoch = -1;
  private streamCreated: string | undefined;
  private cursor = 0;
  private closed = false;
  private notifiedAtMs = 0;
  private readonly listeners = new Set<() => void>();
  private readonly running: Promise<void>;
  private readonly js: JetStreamClient;

  private constructor(
    readonly connection: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly stream: string,
  ) {
    this.js = jetstream(connection);
    this.running = this.run();
  }

  static async start(url: string | readonly string[], options: { stream?: string } = {}): Promise<EventStreamReader> {
    const connection = await connect({
      servers: typeof url === "string" ? url : [...url],
      maxReconnectAttempts: -1,
      reconnectTimeWait: 100,
      waitOnFirstConnect: true,
    });
    const jsm = await jetstreamManager(connection, { timeout: 2_000 });
    return new EventStreamReader(connection, jsm, options.stream ?? "TIMER_EVENTS");
  }

  /** Same envelope id stored more than once (a republish the duplicate window did not drop). */
  get duplicates(): number {
    return this.duplicateCount;
  }

  /** Distinct timers (tenant, serviceCallId) with at least one event. */
  get firedTimers(): number {
    return this.byTimer.size;
  }

  eventsOf(tenantId: string, serviceCallId: string): readonly StreamedDueEvent[] {
    return this.byTimer.get(timerKey(tenantId, serviceCallId)) ?? [];
  }

  hasFired(tenantId: string, serviceCallId: string): boolean {
    return this.byTimer.has(timerKey(tenantId, serviceCallId));
  }

  /** Resolves once `condition()` holds (checked as messages arrive and every 100 ms); rejects after `timeoutMs`. */
  waitUntil(condition: () => boolean, timeoutMs: number, what = "condition"): Promise<void> {
    if (condition()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!condition()) return;
        done();
        resolve();
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`${what} not met within ${timeoutMs} ms (${this.events.length} events read, ${this.firedTimers} timers fired)`));
      }, timeoutMs);
      const poll = setInterval(check, 100);
      const done = (): void => {
        clearTimeout(timer);
        clearInterval(poll);
        this.listeners.delete(check);
      };
      this.listeners.add(check);
    });
  }

  /** Waits until every one of `timers` has at least one event. */
  waitForTimers(tenantId: string, serviceCallIds: Iterable<string>, timeoutMs: number): Promise<void> {
    const missing = new Set(serviceCallIds);
    const condition = (): boolean => {
      for (const id of missing) if (this.hasFired(tenantId, id)) missing.delete(id);
      return missing.size === 0;
    };
    return this.waitUntil(condition, timeoutMs, `all timers fired`).catch((error: Error) => {
      throw new Error(`${error.message}; ${missing.size} missing, e.g. ${[...missing].slice(0, 5).join(", ")}`);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.connection.close().catch(() => undefined);
    await this.running;
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      let consumerName: string | undefined;
      try {
        await this.checkEpoch();
        const info = await this.jsm.consumers.add(this.stream, {
          ack_policy: AckPolicy.None,
          deliver_policy: DeliverPolicy.StartSequence,
          opt_start_seq: this.cursor + 1,
          inactive_threshold: nanos(10_000),
          mem_storage: true,
          num_replicas: 1,
        });
        consumerName = info.name;
        const consumer = await this.js.consumers.get(this.stream, consumerName);
        while (!this.closed) {
          const messages = await consumer.fetch({ max_messages: FETCH_BATCH, expires: FETCH_EXPIRES_MS });
          let stalled = false;
          const watchdog = setTimeout(() => {
            stalled = true;
            messages.stop();
          }, FETCH_STALL_MS);
          let gap = false;
          try {
            for await (const message of messages) {
              if (message.seq !== this.cursor + 1) {
                gap = true;
                break;
              }
              this.record(message);
              if (Date.now() - this.notifiedAtMs >= NOTIFY_EVERY_MS) this.notify();
            }
          } finally {
            clearTimeout(watchdog);
          }
          this.notify();
          if (gap) throw new Error("sequence gap");
          if (stalled) throw new Error("fetch stalled");
        }
      } catch {
        if (this.closed) break;
        if (consumerName !== undefined) void this.jsm.consumers.delete(this.stream, consumerName).catch(() => undefined);
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  }

  /**
   * A stream with another creation time than the one being read was recreated: read it from 1. A
   * stream whose last sequence is below what was read lost its tail (a broker killed before it wrote
   * it): read on from its new end, so that new messages reusing those sequences are not skipped.
   */
  private async checkEpoch(): Promise<void> {
    const info = await this.jsm.streams.info(this.stream);
    if (info.created !== this.streamCreated) {
      this.streamCreated = info.created;
      this.epoch++;
      this.cursor = 0;
    } else if (info.state.last_seq < this.cursor) {
      this.lostTail.push({ readUpTo: this.cursor, lastSeqAfter: info.state.last_seq });
      this.cursor = info.state.last_seq;
    }
  }

  private record(message: JsMsg): void {
    this.cursor = message.seq;
    let body: { id?: string; type?: string; payload?: Record<string, unknown> };
    try {
      body = message.json();
    } catch {
      return;
    }
    if (body.type !== "DueTimeReached" || body.payload === undefined) return;
    const payload = body.payload;
    const event: StreamedDueEvent = {
      seq: message.seq,
      epoch: this.epoch,
      id: String(body.id),
      msgId: message.headers?.get("Nats-Msg-Id") || undefined,
      tenantId: String(payload.tenantId),
      serviceCallId: String(payload.serviceCallId),
      dueAtMs: Date.parse(String(payload.dueAt)),
      reachedAtMs: Date.parse(String(payload.reachedAt)),
      storedAtMs: Math.floor(message.info.timestampNanos / 1_000_000),
      data: payload.data,
      occurrence: typeof payload.occurrence === "number" ? payload.occurrence : undefined,
      missedOccurrences: typeof payload.missedOccurrences === "number" ? payload.missedOccurrences : undefined,
    };
    this.events.push(event);
    if (this.envelopeIds.has(event.id)) this.duplicateCount++;
    else this.envelopeIds.add(event.id);
    const key = timerKey(event.tenantId, event.serviceCallId);
    const list = this.byTimer.get(key);
    if (list === undefined) this.byTimer.set(key, [event]);
    else list.push(event);
  }

  private notify(): void {
    this.notifiedAtMs = Date.now();
    for (const listener of [...this.listeners]) listener();
  }
}

function timerKey(tenantId: string, serviceCallId: string): string {
  return `${tenantId}\u0000${serviceCallId}`;
}
