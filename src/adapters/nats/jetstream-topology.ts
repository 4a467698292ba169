import { AckPolicy, DeliverPolicy, JetStreamApiError, RetentionPolicy, StorageType, type JetStreamManager } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import { allCommandSubjects, allEventSubjects } from "../../app/subjects.js";

/** Names of the JetStream resources the service uses (CONTRACT §1). */
export interface TimerTopology {
  readonly subjectPrefix: string;
  readonly commandsStream: string;
  readonly eventsStream: string;
  readonly consumerName: string;
  /** Replicas of the streams and the consumer it creates (TIMER_STREAM_REPLICAS, CONTRACT §6); default 1. */
  readonly replicas?: number;
}

/** Events are kept this long for subscribers that come later. */
const EVENTS_MAX_AGE_MS = 7 * 24 * 3_600_000;
/** The contract's minimum: a republish after a crash and restart lands inside it. */
const EVENTS_DUPLICATE_WINDOW_MS = 2 * 60_000;
/**
 * Commands get no broker de-duplication: every tenant publishes into the one commands stream, so a
 * stream-wide window would let one tenant's `Nats-Msg-Id` suppress another tenant's command.
 * nats-server (2.9) has no "off": 0 means the 2-minute default and 100 ms is the smallest window it
 * accepts. The service needs none: re-applying a command changes nothing (CONTRACT §3.2).
 */
const COMMANDS_DUPLICATE_WINDOW_MS = 100;
/**
 * Redelivery of a command that was neither acked nor nak'ed: the service died holding it, or it was
 * in flight to a service that stopped pulling. A batch is stored within a second, so 10 s is ample
 * and bounds how long a restart delays such commands.
 */
const COMMAND_ACK_WAIT_MS = 10_000;
const COMMAND_MAX_ACK_PENDING = 20_000;

function isNotFound(error: unknown): boolean {
  return error instanceof JetStreamApiError && error.status === 404;
}

/**
 * Creates the two streams and the durable command consumer when missing; existing ones are used
 * as they are (an operator may have made them with other limits or replicas). Returns whether
 * anything had to be created.
 */
export async function ensureTimerTopology(jsm: JetStreamManager, topology: TimerTopology): Promise<boolean> {
  const { subjectPrefix, commandsStream, eventsStream, consumerName } = topology;
  const replicas = topology.replicas ?? 1;
  let created = await ensureStream(jsm, commandsStream, () =>
    jsm.streams.add({
      name: commandsStream,
      subjects: [allCommandSubjects(subjectPrefix)],
      // A command is work: it leaves the stream once the service acked (stored) or refused it.
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      num_replicas: replicas,
      duplicate_window: nanos(COMMANDS_DUPLICATE_WINDOW_MS),
    }),
  );
  created =
    (await ensureStream(jsm, eventsStream, () =>
      jsm.streams.add({
        name: eventsStream,
        subjects: [allEventSubjects(subjectPrefix)],
        retention: RetentionPolicy.Limits,
        storage: StorageType.File,
        num_replicas: replicas,
        max_age: nanos(EVENTS_MAX_AGE_MS),
        duplicate_window: nanos(EVENTS_DUPLICATE_WINDOW_MS),
      }),
    )) || created;
  try {
    await jsm.consumers.info(commandsStream, consumerName);
    return created;
  } catch (error) {
    if (!isNotFound(error)) throw error;
    await jsm.consumers.add(commandsStream, {
      durable_name: consumerName,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      filter_subject: allCommandSubjects(subjectPrefix),
      ack_wait: nanos(COMMAND_ACK_WAIT_MS),
      max_deliver: -1,
      max_ack_pending: COMMAND_MAX_ACK_PENDING,
      // No num_replicas: the consumer inherits the stream's, which is `replicas` when the service
      // made the stream and the operator's choice otherwise (a work-queue consumer must match it).
    });
    return true;
  }
}

/** Returns true when the stream had to be created. */
async function ensureStream(jsm: JetStreamManager, name: string, create: () => Promise<unknown>): Promise<boolean> {
  try {
    await jsm.streams.info(name);
    return false;
  } catch (error) {
    if (!isNotFound(error)) throw error;
    try {
      await create();
    } catch (createError) {
      // Another instance created it in the meantime: use it as it is.
      await jsm.streams.info(name).catch(() => Promise.reject(createError));
    }
    return true;
  }
}
