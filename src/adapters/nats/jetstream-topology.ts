import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type JetStreamManager,
  type StreamInfo,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import { allCommandSubjects, allEventSubjects } from "../../app/subjects.js";
import {
  commandSources,
  partitionConsumerName,
  partitionFilter,
  partitionsOf,
  partitionTransform,
  type CommandSource,
} from "./command-partitions.js";

/** Names of the JetStream resources the service uses (CONTRACT §1). */
export interface TimerTopology {
  readonly subjectPrefix: string;
  readonly commandsStream: string;
  readonly eventsStream: string;
  readonly consumerName: string;
  /** Replicas of the streams and the consumer it creates (TIMER_STREAM_REPLICAS, CONTRACT §6); default 1. */
  readonly replicas?: number;
  /** TIMER_COMMAND_PARTITIONS: partitions of the commands stream by tenant; default 1 (none). */
  readonly partitions?: number;
  /** The broker's version (`INFO`); partitions need subject transforms, nats-server 2.10 or later. */
  readonly serverVersion?: string;
}

/** What ensureTimerTopology found or made. */
export interface TopologyState {
  /** Something was missing and had to be created, or the stream was partitioned: pulls start over. */
  readonly created: boolean;
  /** The consumers to pull, the base consumer first. */
  readonly sources: readonly CommandSource[];
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
 * Creates the two streams and the durable command consumers when missing; existing ones are used
 * as they are (an operator may have made them with other limits or replicas). The one change made
 * to an existing stream: partitioning, when asked for, of a commands stream an older version of the
 * service made (see partitionCommandsStream).
 */
export async function ensureTimerTopology(jsm: JetStreamManager, topology: TimerTopology): Promise<TopologyState> {
  const { subjectPrefix, commandsStream, eventsStream } = topology;
  const replicas = topology.replicas ?? 1;
  const wanted = supportsTransforms(topology.serverVersion) ? (topology.partitions ?? 1) : 1;
  let created = await ensureStream(jsm, commandsStream, () =>
    jsm.streams.add({
      name: commandsStream,
      subjects: [allCommandSubjects(subjectPrefix)],
      // A command is work: it leaves the stream once the service acked (stored) or refused it.
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      num_replicas: replicas,
      duplicate_window: nanos(COMMANDS_DUPLICATE_WINDOW_MS),
      ...(wanted > 1 ? { subject_transform: partitionTransform(subjectPrefix, wanted) } : {}),
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
  let stream = await jsm.streams.info(commandsStream);
  let partitions = partitionsOf(subjectPrefix, stream.config.subject_transform);
  if (partitions === undefined && wanted > 1 && isServiceMadeCommandsStream(stream, subjectPrefix)) {
    stream = await partitionCommandsStream(jsm, topology, wanted);
    partitions = partitionsOf(subjectPrefix, stream.config.subject_transform);
    created = true;
  }
  return {
    created: (await ensureConsumers(jsm, topology, partitions ?? 1)) || created,
    sources: commandSources(subjectPrefix, topology.consumerName, partitions ?? 1),
  };
}

/**
 * A commands stream as the service makes it (an older version made it unpartitioned): work queue,
 * the one subject filter, no transform. A stream of an operator's own design is used as it is.
 */
function isServiceMadeCommandsStream(stream: StreamInfo, prefix: string): boolean {
  const { config } = stream;
  return (
    config.subject_transform === undefined &&
    config.retention === RetentionPolicy.Workqueue &&
    config.subjects?.length === 1 &&
    config.subjects[0] === allCommandSubjects(prefix)
  );
}

/**
 * Partitions an existing commands stream. The base consumer stays as it is: what the stream holds
 * already keeps its subjects and drains through it, and an instance of an older version pulling it
 * never sees a partitioned subject. The order of those commands against later ones of the same
 * timer is kept by the commands' timestamps (CONTRACT §3.2).
 */
function partitionCommandsStream(jsm: JetStreamManager, topology: TimerTopology, partitions: number): Promise<StreamInfo> {
  return jsm.streams.update(topology.commandsStream, { subject_transform: partitionTransform(topology.subjectPrefix, partitions) });
}

/** Creates the missing command consumers; returns whether any was missing. */
async function ensureConsumers(jsm: JetStreamManager, topology: TimerTopology, partitions: number): Promise<boolean> {
  const { subjectPrefix, commandsStream, consumerName } = topology;
  const existing = new Set<string>();
  for await (const info of jsm.consumers.list(commandsStream)) existing.add(info.name);
  const wanted: Array<{ name: string; filter: Partial<ConsumerConfig> }> = [
    { name: consumerName, filter: { filter_subject: allCommandSubjects(subjectPrefix) } },
  ];
  if (partitions > 1) {
    for (let p = 0; p < partitions; p++) {
      wanted.push({ name: partitionConsumerName(consumerName, p), filter: { filter_subject: partitionFilter(subjectPrefix, p) } });
    }
  }
  let created = false;
  for (const { name, filter } of wanted) {
    if (existing.has(name)) continue;
    try {
      await jsm.consumers.add(commandsStream, {
        durable_name: name,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ack_wait: nanos(COMMAND_ACK_WAIT_MS),
        max_deliver: -1,
        max_ack_pending: COMMAND_MAX_ACK_PENDING,
        ...filter,
        // No num_replicas: the consumer inherits the stream's, which is `replicas` when the service
        // made the stream and the operator's choice otherwise (a work-queue consumer must match it).
      });
    } catch (error) {
      // Another instance created it in the meantime: use it as it is.
      if ((await consumerInfo(jsm, commandsStream, name)) === undefined) throw error;
    }
    created = true;
  }
  return created;
}

async function consumerInfo(jsm: JetStreamManager, stream: string, name: string): Promise<unknown> {
  try {
    return await jsm.consumers.info(stream, name);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** Subject transforms on streams came with nats-server 2.10. */
function supportsTransforms(version: string | undefined): boolean {
  const match = /^v?(\d+)\.(\d+)/.exec(version ?? "");
  if (match === null) return false;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  return major > 2 || (major === 2 && minor >= 10);
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
