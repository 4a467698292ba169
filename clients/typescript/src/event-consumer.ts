import { AckPolicy, DeliverPolicy, JetStreamApiError, jetstream, jetstreamManager, type JsMsg } from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import { fromNatsError } from "./timer-client-error.js";
import type { ConsumeOptions, EventKind, EventSubscription, TimerEvent } from "./types.js";

interface ConsumeSettings extends ConsumeOptions {
  readonly tenantId: string;
  readonly subjectPrefix: string;
  readonly eventsStream: string;
  readonly kinds: readonly EventKind[];
}

const KIND_TYPES: Record<EventKind, string> = { due: "DueTimeReached", missed: "DueTimeMissed", rejected: "CommandRejected" };
const CONSUMER_NOT_FOUND = 10014;
const MAX_REMEMBERED = 100_000;
const decoder = new TextDecoder();

/**
 * The events filter: one kind's subject, or every event subject of the tenant when several are
 * wanted (a single filter works on every nats-server; events of kinds not asked for are acked
 * without reaching the handler).
 */
function filterSubject({ subjectPrefix, tenantId, kinds }: ConsumeSettings): string {
  return kinds.length === 1 ? `${subjectPrefix}.events.${kinds[0]}.${tenantId}` : `${subjectPrefix}.events.*.${tenantId}`;
}

/** Ids of handled events, forgotten after the window (and beyond a bound, oldest first). */
class HandledIds {
  private readonly expiries = new Map<string, number>();

  constructor(private readonly windowMs: number) {}

  has(id: string, now: number): boolean {
    const expiry = this.expiries.get(id);
    return expiry !== undefined && expiry > now;
  }

  add(id: string, now: number): void {
    this.expiries.delete(id);
    this.expiries.set(id, now + this.windowMs);
    for (const [oldest, expiry] of this.expiries) {
      if (expiry > now && this.expiries.size <= MAX_REMEMBERED) break;
      this.expiries.delete(oldest);
    }
  }
}

function headersOf(msg: JsMsg): Record<string, string> {
  const result: Record<string, string> = {};
  for (const key of msg.headers?.keys() ?? []) result[key] = msg.headers!.get(key);
  return result;
}

async function ensureConsumer(nc: NatsConnection, settings: ConsumeSettings): Promise<void> {
  const jsm = await jetstreamManager(nc);
  try {
    await jsm.consumers.info(settings.eventsStream, settings.durable);
    return;
  } catch (error) {
    if (!(error instanceof JetStreamApiError && error.code === CONSUMER_NOT_FOUND)) throw error;
  }
  await jsm.consumers.add(settings.eventsStream, {
    durable_name: settings.durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: settings.deliverPolicy === "all" ? DeliverPolicy.All : DeliverPolicy.New,
    filter_subject: filterSubject(settings),
    ack_wait: nanos(settings.ackWaitMs ?? 30_000),
  });
}

export async function consumeEvents(
  nc: NatsConnection,
  settings: ConsumeSettings,
  handler: (event: TimerEvent) => Promise<void> | void,
  onStopped: () => void,
): Promise<EventSubscription> {
  let messages;
  try {
    await ensureConsumer(nc, settings);
    const consumer = await jetstream(nc).consumers.get(settings.eventsStream, settings.durable);
    messages = await consumer.consume({ max_messages: 64 });
  } catch (error) {
    throw fromNatsError(error, `consuming ${settings.eventsStream}/${settings.durable}`);
  }
  const wanted = new Set(settings.kinds.map((k) => KIND_TYPES[k]));
  const handled = new HandledIds(settings.dedupeWindowMs ?? 120_000);
  const baseDelay = settings.nakDelayMs ?? 1000;
  const maxDelay = settings.maxNakDelayMs ?? 60_000;
  let stopping = false;

  const loop = (async () => {
    for await (const msg of messages) {
      let event: TimerEvent;
      try {
        const envelope = JSON.parse(decoder.decode(msg.data)) as Omit<TimerEvent, "headers" | "subject" | "deliveryCount">;
        if (typeof envelope !== "object" || envelope === null || typeof envelope.id !== "string") throw new Error("not an event envelope");
        event = { ...envelope, headers: headersOf(msg), subject: msg.subject, deliveryCount: msg.info.deliveryCount } as TimerEvent;
      } catch (error) {
        msg.term("not a timer event");
        settings.onError?.(new Error(`event ${msg.seq} on ${msg.subject} could not be read`, { cause: error }));
        continue;
      }
      if (!wanted.has(event.type) || handled.has(event.id, Date.now())) {
        msg.ack();
        continue;
      }
      try {
        await handler(event);
      } catch {
        if (!stopping) msg.nak(Math.min(maxDelay, baseDelay * 2 ** Math.min(30, msg.info.deliveryCount - 1)));
        continue;
      }
      handled.add(event.id, Date.now());
      msg.ack();
    }
  })().catch((error: unknown) => {
    // the iterator ends with an error when the consumer is deleted or the connection closes
    if (!stopping) settings.onError?.(error instanceof Error ? error : new Error(String(error)));
  });

  let stopped: Promise<void> | undefined;
  return {
    stop() {
      stopped ??= (async () => {
        stopping = true;
        await messages.close().catch(() => undefined);
        await loop;
        onStopped();
      })();
      return stopped;
    },
  };
}
