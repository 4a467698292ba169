import { connect, createInbox, type MsgHdrs, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import type { BenchContext } from "./context.js";
import { log } from "./log.js";
import { waitUntil, withTimeout } from "./scope.js";

// NATS client of the bench (a separate process from the service)

export class BenchClient {
  private constructor(
    readonly nc: NatsConnection,
    readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
  ) {}

  static async connect(ctx: BenchContext, url: string): Promise<BenchClient> {
    const nc = await connect({ servers: url, name: "bench", maxReconnectAttempts: 20, reconnectTimeWait: 250 });
    const client = new BenchClient(nc, jetstream(nc, { timeout: 30_000 }), await jetstreamManager(nc, { timeout: 10_000 }));
    ctx.scope.defer(() => client.close());
    return client;
  }

  async close(): Promise<void> {
    if (this.nc.isClosed()) return;
    await withTimeout(this.nc.drain(), 5_000, "client drain").catch(() => this.nc.close());
  }

  /**
   * State of the service's command consumers (the base one and its partitions, `{consumer}-p{n}`),
   * for "has the service stored and acked everything".
   */
  async consumerBacklog(stream: string, consumer: string): Promise<{ pending: number; ackPending: number; delivered: number }> {
    const backlog = { pending: 0, ackPending: 0, delivered: 0 };
    for await (const info of this.jsm.consumers.list(stream)) {
      if (info.name !== consumer && !info.name.startsWith(`${consumer}-p`)) continue;
      backlog.pending += info.num_pending;
      backlog.ackPending += info.num_ack_pending;
      backlog.delivered = Math.max(backlog.delivered, info.delivered.stream_seq);
    }
    return backlog;
  }
}

export interface OutMessage {
  readonly subject: string;
  readonly data: Uint8Array;
  /** Sent with the message (e.g. `traceparent`). */
  readonly headers?: MsgHdrs;
}

/**
 * Publishes every message to JetStream with `inFlight` awaiting their stream acks at any time: a core
 * publish with a reply subject, the PubAcks collected on one wildcard inbox subscription. That is
 * what `js.publish()` does on the wire, without its per-call request bookkeeping (a promise, a
 * timer and a request object per message cost the bench ~70 µs of CPU per publish under load,
 * which would make the load generator the bottleneck). An error ack or no ack within 10 s
 * republishes the message (at most 3 times) — a duplicate command is harmless (same timestampMs →
 * ignored). Bounded by `timeoutMs`.
 */
export async function publishAll(
  nc: NatsConnection,
  messages: readonly OutMessage[],
  options: { inFlight: number; timeoutMs: number; label: string },
): Promise<{ firstAtMs: number; firstPerfMs: number; lastAckPerfMs: number; retries: number }> {
  const n = messages.length;
  const firstAtMs = Date.now();
  const firstPerfMs = performance.now();
  if (n === 0) return { firstAtMs, firstPerfMs, lastAckPerfMs: firstPerfMs, retries: 0 };
  const inbox = createInbox("_BENCH_ACK");
  const sentAt = new Float64Array(n).fill(-1); // -1: not sent, 0: acked
  const attempts = new Uint8Array(n);
  let next = 0;
  let acked = 0;
  let retries = 0;
  let failure: Error | undefined;
  let finish: (() => void) | undefined;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const send = (i: number): void => {
    sentAt[i] = performance.now();
    const message = messages[i]!;
    nc.publish(message.subject, message.data, {
      reply: `${inbox}.${i}`,
      ...(message.headers === undefined ? {} : { headers: message.headers }),
    });
  };
  const retry = (i: number, why: string): void => {
    if (attempts[i]! >= 3) {
      failure ??= new Error(`${options.label}: message ${i} not accepted after ${attempts[i]! + 1} attempts (${why})`);
      finish?.();
      return;
    }
    attempts[i]!++;
    retries++;
    send(i);
  };
  const subscription = nc.subscribe(`${inbox}.*`, {
    callback: (error, ack) => {
      if (error !== null) return;
      const i = Number(ack.subject.slice(inbox.length + 1));
      if (!(i >= 0 && i < n) || sentAt[i]! <= 0) return; // unknown or already acked
      const status = ack.headers?.code ?? 0;
      if (status >= 300 || (ack.data.length > 0 && ack.string().includes('"error"'))) {
        retry(i, status >= 300 ? `status ${status}` : ack.string().slice(0, 200));
        return;
      }
      sentAt[i] = 0;
      acked++;
      if (acked === n) finish?.();
      else if (next < n) send(next++);
    },
  });
  const watchdog = setInterval(() => {
    const now = performance.now();
    if (now - firstPerfMs > options.timeoutMs) {
      failure ??= new Error(
        `${options.label}: publishing did not finish within ${Math.round(options.timeoutMs / 1000)} s (${acked}/${n} acked)`,
      );
      finish?.();
      return;
    }
    for (let i = 0; i < next; i++) if (sentAt[i]! > 0 && now - sentAt[i]! > 10_000) retry(i, "no ack within 10 s");
  }, 1_000);
  const progress = setInterval(() => log(`${options.label}: ${acked}/${n} acked`), 2_000);
  try {
    await nc.flush();
    while (next < Math.min(n, options.inFlight)) send(next++);
    await finished;
  } finally {
    clearInterval(watchdog);
    clearInterval(progress);
    subscription.unsubscribe();
  }
  if (failure !== undefined) throw failure;
  return { firstAtMs, firstPerfMs, lastAckPerfMs: performance.now(), retries };
}

/**
 * Waits until the durable consumer has nothing pending and nothing unacked: for the service that
 * means every command was stored and acked. Polls every `intervalMs`; returns when it saw that.
 */
export async function waitConsumerDrained(
  client: BenchClient,
  stream: string,
  consumer: string,
  options: { timeoutMs: number; intervalMs?: number; what: string; published?: () => boolean },
): Promise<{ atMs: number; perfMs: number }> {
  const { atMs, perfMs } = await waitUntil(
    async () => {
      if (options.published !== undefined && !options.published()) return false;
      const backlog = await client.consumerBacklog(stream, consumer);
      return backlog.pending === 0 && backlog.ackPending === 0;
    },
    { timeoutMs: options.timeoutMs, intervalMs: options.intervalMs ?? 10, what: options.what },
  );
  return { atMs, perfMs };
}

const encoder = new TextEncoder();

/** A ScheduleTimer envelope (pre-encoded: the bench does not JSON-encode while measuring). */
export function scheduleMessage(tenantId: string, serviceCallId: string, dueAtMs: number, timestampMs = Date.now()): OutMessage {
  const envelope = {
    id: `${serviceCallId}@${timestampMs}`,
    type: "ScheduleTimer",
    tenantId,
    timestampMs,
    payload: { tenantId, serviceCallId, dueAt: new Date(dueAtMs).toISOString() },
  };
  return { subject: `timer.commands.schedule.${tenantId}`, data: encoder.encode(JSON.stringify(envelope)) };
}

/** Zero-padded ids sort like the numbers (rows are then appended to the primary-key B-tree). */
export function callId(prefix: string, i: number): string {
  return `${prefix}-${String(i).padStart(8, "0")}`;
}

export const COMMANDS_STREAM = "TIMER_COMMANDS";
export const COMMANDS_CONSUMER = "timer-service";

/**
 * Counts distinct DueTimeReached (by Nats-Msg-Id) on a core subscription and remembers when each
 * arrived. `keepBodies` also parses every body (only for small counts).
 */
export class DueEventCollector {
  readonly seen = new Set<string>();
  readonly bodies: { receivedAtMs: number; body: Record<string, any> }[] = [];
  duplicates = 0;
  firstAtMs: number | undefined;
  lastAtMs: number | undefined;
  private waiter: { count: number; resolve: () => void } | undefined;
  private readonly subscription: Subscription;

  constructor(
    ctx: BenchContext,
    nc: NatsConnection,
    subject: string,
    private readonly keepBodies = false,
  ) {
    this.subscription = nc.subscribe(subject, {
      callback: (error, message) => {
        if (error !== null) return;
        const receivedAtMs = Date.now();
        const id = message.headers?.get("Nats-Msg-Id") || `${message.subject}#${message.sid}:${this.seen.size}`;
        if (this.seen.has(id)) {
          this.duplicates++;
          return;
        }
        this.seen.add(id);
        this.firstAtMs ??= receivedAtMs;
        this.lastAtMs = receivedAtMs;
        if (this.keepBodies) {
          try {
            this.bodies.push({ receivedAtMs, body: message.json() });
          } catch {
            // not JSON: counted, not timed
          }
        }
        if (this.waiter !== undefined && this.seen.size >= this.waiter.count) {
          this.waiter.resolve();
          this.waiter = undefined;
        }
      },
    });
    ctx.scope.defer(() => this.subscription.unsubscribe());
  }

  get count(): number {
    return this.seen.size;
  }

  /** Resolves once `count` distinct events arrived; rejects after `timeoutMs`. */
  async waitFor(count: number, timeoutMs: number, label: string): Promise<void> {
    if (this.seen.size >= count) return;
    const progress = setInterval(() => log(`${label}: ${this.seen.size}/${count} events received`), 2_000);
    try {
      await withTimeout(
        new Promise<void>((resolve) => (this.waiter = { count, resolve })),
        timeoutMs,
        `${label} (${this.seen.size}/${count} events)`,
      );
    } finally {
      clearInterval(progress);
      this.waiter = undefined;
    }
  }
}
