/**
 * Consumer: reads the service's events from the TIMER_EVENTS stream and prints them.
 *
 *   npx tsx examples/consumer.ts [--tenant acme] [--durable timer-example-acme | --ordered]
 *
 * By default it uses a durable consumer (created on the first run, starting with new events): stop
 * and start it again and it goes on where it left off, because each event is acked after it is
 * handled. `--ordered` uses an ordered consumer instead: nothing is kept on the server, and it sees
 * only events published while it runs. Stops on Ctrl-C.
 */
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type Consumer, type JetStreamClient, type JsMsg } from "@nats-io/jetstream";
import { brokerUrls, SUBJECT_PREFIX } from "./producer.js";

/** The events stream, the service's TIMER_EVENTS_STREAM (default "TIMER_EVENTS"). */
export const EVENTS_STREAM = process.env.TIMER_EVENTS_STREAM ?? "TIMER_EVENTS";

interface Envelope<Type extends string, Payload> {
  /** DueTimeReached / DueTimeMissed: `{tenantId}:{serviceCallId}:{dueAtMs}:{generation}`, also the Nats-Msg-Id header. */
  readonly id: string;
  readonly type: Type;
  readonly tenantId: string;
  readonly correlationId?: string;
  readonly timestampMs: number;
  readonly payload: Payload;
}

/** The timer fell due: published once per due time (at least once; dedupe by `id`). */
export type DueTimeReached = Envelope<
  "DueTimeReached",
  {
    readonly tenantId: string;
    readonly serviceCallId: string;
    readonly dueAt: string;
    readonly reachedAt: string;
    readonly data?: unknown;
    /** 1 when created, +1 per change; drop an event older than one already seen. */
    readonly generation: number;
    /** reachedAt − dueAt. */
    readonly lateMs: number;
    readonly occurrence?: number;
    readonly missedOccurrences?: number;
    /** A tracked timer's publish (1, 2, …; CONTRACT §11); absent when the timer has no `delivery`. */
    readonly attempt?: number;
  }
>;

/** Published instead of DueTimeReached when the timer had `maxLatenessMs` and fired later than that. */
export type DueTimeMissed = Envelope<
  "DueTimeMissed",
  {
    readonly tenantId: string;
    readonly serviceCallId: string;
    readonly dueAt: string;
    readonly missedAt: string;
    readonly lateMs: number;
    readonly generation: number;
    readonly data?: unknown;
  }
>;

/** A command the service could not accept; `commandId` is the command envelope's `id`. */
export type CommandRejected = Envelope<
  "CommandRejected",
  { readonly code: string; readonly reason: string; readonly subject: string; readonly commandId?: string; readonly serviceCallId?: string }
>;

export type TimerEvent = DueTimeReached | DueTimeMissed | CommandRejected;

/** Every event of one tenant: `{prefix}.events.{due,missed,rejected}.{tenantId}`. */
function tenantEvents(tenantId: string): string {
  return `${SUBJECT_PREFIX}.events.*.${tenantId}`;
}

/**
 * An ordered consumer: ephemeral, nothing to clean up, delivers the events published from `since`
 * on, of one tenant or (without `tenantId`) of all, `_unknown` included.
 */
export function openOrderedEventConsumer(js: JetStreamClient, since: Date, tenantId?: string): Promise<Consumer> {
  return js.consumers.get(EVENTS_STREAM, {
    filter_subjects: tenantId === undefined ? `${SUBJECT_PREFIX}.events.>` : tenantEvents(tenantId),
    deliver_policy: DeliverPolicy.StartTime,
    opt_start_time: since.toISOString(),
  });
}

/** A durable consumer with explicit acks, created when missing; it resumes after a restart. */
export async function openDurableEventConsumer(nc: NatsConnection, tenantId: string, name: string): Promise<Consumer> {
  const jsm = await jetstreamManager(nc);
  try {
    await jsm.consumers.info(EVENTS_STREAM, name);
  } catch {
    await jsm.consumers.add(EVENTS_STREAM, {
      durable_name: name,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.New,
      filter_subject: tenantEvents(tenantId),
    });
  }
  return jetstream(nc).consumers.get(EVENTS_STREAM, name);
}

/** The event a message carries. */
export function eventOf(message: JsMsg): TimerEvent {
  return message.json<TimerEvent>();
}

/** One line for a person. */
export function describeEvent(event: TimerEvent): string {
  switch (event.type) {
    case "DueTimeReached":
      return `DueTimeReached ${event.tenantId}/${event.payload.serviceCallId}: due ${event.payload.dueAt}, reached ${event.payload.reachedAt} (${event.payload.lateMs} ms late, generation ${event.payload.generation})`;
    case "DueTimeMissed":
      return `DueTimeMissed ${event.tenantId}/${event.payload.serviceCallId}: due ${event.payload.dueAt}, ${event.payload.lateMs} ms late`;
    case "CommandRejected":
      return `CommandRejected ${event.payload.code} for command ${event.payload.commandId ?? "?"} on ${event.payload.subject}: ${event.payload.reason}`;
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      tenant: { type: "string", default: "acme" },
      durable: { type: "string" },
      ordered: { type: "boolean", default: false },
    },
  });
  const nc = await connect({ servers: brokerUrls(), name: "timer-example-consumer" });
  const consumer = values.ordered
    ? await openOrderedEventConsumer(jetstream(nc), new Date(), values.tenant)
    : await openDurableEventConsumer(nc, values.tenant, values.durable ?? `timer-example-${values.tenant}`);
  const messages = await consumer.consume();
  const stop = (): void => void messages.close().then(() => nc.close());
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  console.error(`reading ${tenantEvents(values.tenant)} from ${EVENTS_STREAM} (Ctrl-C to stop)`);
  for await (const message of messages) {
    const event = eventOf(message);
    console.log(describeEvent(event));
    console.log(`  ${JSON.stringify(event)}`);
    message.ack(); // handled: a durable consumer will not deliver it again
  }
}

// Run only when started as a script, not when imported by schedule-and-wait.ts.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main().catch((error: unknown) => {
    console.error(`${String(error)} (is the service running? it creates the ${EVENTS_STREAM} stream)`);
    process.exitCode = 1;
  });
}
