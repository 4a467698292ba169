import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { AddressInfo } from "node:net";
import type { TimerServiceConfig } from "../config/config.js";
import type { Clock } from "../app/clock.js";
import type { Logger } from "../app/logger.js";
import type { Storage } from "../app/storage.js";
import { CommandDecoder } from "../app/commands/command-decoder.js";
import { TimerCommandProcessor } from "../app/commands/timer-command-processor.js";
import { DueTimerPoll } from "../app/firing/due-timer-poll.js";
import { DueTimerLoop } from "../app/firing/due-timer-loop.js";
import { DeliveryDeadlinePoll } from "../app/firing/delivery-deadline-poll.js";
import { DeliveryDeadlineLoop } from "../app/firing/delivery-deadline-loop.js";
import { PrefixCancelSweeper } from "../app/commands/prefix-cancel-sweeper.js";
import { CronerCalendar } from "../adapters/cron/croner-calendar.js";
import { CatchUpThread } from "../adapters/cron/catch-up-thread.js";
import { PrometheusTimerMetrics } from "../adapters/metrics/prometheus-timer-metrics.js";
import { HealthHttpServer, type ReadinessCheck } from "../adapters/http/health-http-server.js";
import { QueriesAndRetention } from "./queries-and-retention.js";
import { NatsBroker } from "../adapters/nats/nats-broker.js";
import { warnOfOldNatsServer } from "../adapters/nats/old-nats-server.js";
import { ADMIN_DISABLED } from "../adapters/http/timer-query-routes.js";
import { JetStreamEventPublisher } from "../adapters/nats/jetstream-event-publisher.js";
import { JetStreamAckTracker } from "../adapters/nats/jetstream-ack-tracker.js";
import { JetStreamCommandSender } from "../adapters/nats/jetstream-command-sender.js";
import { NatsCommandOutcomes } from "../adapters/nats/nats-command-outcomes.js";
import { NatsCommandConsumer } from "../adapters/nats/nats-command-consumer.js";
import { JetStreamConsumerLease } from "../adapters/nats/jetstream-consumer-lease.js";
import { watchStorageOutage } from "../app/storage-outage-log.js";
import { PeriodicLoop } from "../app/periodic-loop.js";
import type { TimerTracing } from "../app/timer-tracing.js";
import { HeaderTracing } from "../adapters/tracing/header-tracing.js";

/** How long a DueTimeReached or CommandRejected publish waits for the stream's ack. */
const PUBLISH_ACK_TIMEOUT_MS = 5_000;
/** A shared store's pending count changes under other instances too: read it again this often. */
const SHARED_PENDING_REFRESH_MS = 15_000;
/** The JetStream key-value bucket of the SQLite instances' consumer leases (CONTRACT §6). */
const LEASE_BUCKET = "timer_leases";

/** What the service runs on; tests pass other adapters (a memory store, a fake clock). */
export interface TimerServiceAdapters {
  /**
   * Opens and migrates the store (src/adapters/open-storage.ts). Called once HTTP listens, so that
   * /readyz says 503 while a database that does not answer yet is waited for; the service closes
   * the store when it stops.
   */
  readonly openStorage: () => Promise<Storage>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Trace headers and spans (CONTRACT §13); default: headers only, no spans. Shut down when the service stops. */
  readonly tracing?: TimerTracing;
}

export interface RunningTimerService {
  readonly http: AddressInfo;
  /** Stops consuming, finishes the batch in hand, releases its claims, closes broker and storage. */
  stop(): Promise<void>;
}

/** Names this process as the owner of its claims on due timers. */
function instanceId(): string {
  return `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;
}

/**
 * The composition root: builds the application around the given adapters from plain constructors
 * and starts it in dependency order. HTTP comes first so that /healthz answers and /readyz says 503
 * while the database and the broker are still being reached. The store is closed when the service
 * stops, or when it fails to start.
 */
export async function startTimerService(config: TimerServiceConfig, adapters: TimerServiceAdapters): Promise<RunningTimerService> {
  const { logger, clock } = adapters;
  const tracing = adapters.tracing ?? new HeaderTracing();
  const owner = instanceId();
  const metrics = new PrometheusTimerMetrics();

  let storage: Storage | undefined;
  let broker: NatsBroker | undefined;
  let consumer: NatsCommandConsumer | undefined;
  let lease: JetStreamConsumerLease | undefined;
  // Read at each request. Until the store is open it is not known whether it needs a lease, so the
  // lease check is listed (false) and dropped once a store turns out to need none.
  const leaseCheck: ReadinessCheck = { name: "lease", ok: () => lease?.held === true };
  const checks: ReadinessCheck[] = [
    { name: "storage", ok: () => storage?.store.isWritable() === true },
    { name: "broker", ok: () => broker?.isConnected === true },
    { name: "streams", ok: () => broker?.topologyReady === true && consumer?.pulling === true },
    leaseCheck,
  ];
  const http = new HealthHttpServer(metrics.registry, checks);
  const address = await http.listen(config.httpPort, config.httpHost);
  logger.info({ host: address.address, port: address.port }, "http listening");
  if (config.adminToken === undefined) logger.info({ port: address.port }, ADMIN_DISABLED);

  try {
    storage = await adapters.openStorage();
  } catch (error) {
    await http.close();
    throw error;
  }
  const openedStorage = storage;
  const { store } = openedStorage;
  try {
    metrics.setPending(await store.countScheduled());
  } catch (error) {
    await http.close();
    await openedStorage.close();
    throw error;
  }
  if (openedStorage.exclusive === undefined) checks.splice(checks.indexOf(leaseCheck), 1);
  // Other instances change the count too: on a shared store the gauge is read again now and then.
  const pendingRefresh = openedStorage.shared
    ? new PeriodicLoop(clock, SHARED_PENDING_REFRESH_MS, async () => metrics.setPending(await store.countScheduled()), {
        onError: (error) => logger.warn({ err: error }, "counting scheduled timers failed"),
      })
    : undefined;
  pendingRefresh?.start();
  const stopStorageWatch = watchStorageOutage(store, logger, clock);
  // Queries and retention (CONTRACT §7, §9): /v1 and the admin page here; NATS endpoints and sweeps start with the work.
  const queriesAndRetention = new QueriesAndRetention({ storage: openedStorage, config, clock, logger, registry: metrics.registry });
  http.use(queriesAndRetention.routes);

  let loop: DueTimerLoop | undefined;
  try {
    broker = await NatsBroker.connect({
      servers: config.brokerUrls,
      credentials: config.natsCredentials,
      topology: { ...config, replicas: config.storage.streamReplicas, partitions: config.commandPartitions },
      logger,
      onReconnect: () => loop?.wake(),
      onTopologyRecreated: () => void consumer?.restart(),
    });
    warnOfOldNatsServer(broker.connection.info?.version, logger);
  } catch (error) {
    void pendingRefresh?.stop();
    stopStorageWatch();
    await http.close();
    await openedStorage.close();
    throw error;
  }
  const connectedBroker = broker;
  metrics.brokerConnected.set(1);
  const brokerGauge = new PeriodicLoop(clock, 1_000, () =>
    metrics.brokerConnected.set(connectedBroker.isConnected && connectedBroker.topologyReady ? 1 : 0),
  );
  brokerGauge.start();

  const acks = new JetStreamAckTracker(connectedBroker.connection, PUBLISH_ACK_TIMEOUT_MS);
  const publisher = new JetStreamEventPublisher(acks, {
    subjectPrefix: config.subjectPrefix,
    eventsStream: config.eventsStream,
    clock,
    tracing,
  });
  queriesAndRetention.attachCommandSender(new JetStreamCommandSender(acks, config));
  const calendar = new CronerCalendar();
  // Completion tracking (CONTRACT §11): retries and completion time-outs of Fired timers.
  // What both firing workers share: where they read and write, publish, and whose claims they take.
  const firing = {
    store,
    publisher,
    clock,
    metrics,
    logger,
    batchSize: config.batchSize,
    owner,
    claimTtlMs: config.storage.claimTtlMs,
    historyEntries: config.historyEntries,
  };
  const deadlineLoop = new DeliveryDeadlineLoop({
    worker: new DeliveryDeadlinePoll(firing),
    store,
    clock,
    logger,
    pollingIntervalMs: config.pollingIntervalMs,
  });
  // Long catch-ups of recurring timers (CONTRACT §10) run on a thread of their own.
  const catchUps = new CatchUpThread();
  const worker = new DueTimerPoll({
    ...firing,
    calendar,
    catchUps,
    onCatchUpsDone: () => loop?.wake(),
    onTracked: (deadlineAtMs) => deadlineLoop.wake(deadlineAtMs),
  });
  // Prefix cancels are applied in the background, 1,000 timers per transaction (CONTRACT §10).
  const sweeper = new PrefixCancelSweeper({
    store,
    clock,
    metrics,
    logger,
    batchSize: 1_000,
    idleCheckMs: 5_000,
    historyEntries: config.historyEntries,
  });
  loop = new DueTimerLoop({
    worker,
    store,
    clock,
    logger,
    pollingIntervalMs: config.pollingIntervalMs,
    ...(openedStorage.firingPollsInFlight === undefined ? {} : { pollsInFlight: openedStorage.firingPollsInFlight }),
  });
  const runningLoop = loop;
  const natsOutcomes = new NatsCommandOutcomes(connectedBroker.connection, { subjectPrefix: config.subjectPrefix, logger });
  const processor = new TimerCommandProcessor({
    decoder: new CommandDecoder({
      subjectPrefix: config.subjectPrefix,
      maxHorizonDays: config.maxHorizonDays,
      maxClockSkewMs: config.maxClockSkewMs,
      clock,
      calendar,
      tracing,
    }),
    tracing,
    store,
    publisher,
    clock,
    metrics,
    logger,
    onScheduled: (dueAtMs) => runningLoop.wake(dueAtMs),
    onPrefixCancelled: () => sweeper.wake(),
    maxPendingPerTenant: config.maxPendingPerTenant,
    onDeadline: (deadlineAtMs) => deadlineLoop.wake(deadlineAtMs),
    retentionMs: config.storage.retentionMs,
    // CONTRACT §19: this instance's shared stats answers are dropped before the outcome goes out.
    outcomes: {
      send: (outcome) => {
        if (outcome.outcome !== "rejected") queriesAndRetention.commandConfirmed(outcome.tenantId);
        natsOutcomes.send(outcome);
      },
    },
    historyEntries: config.historyEntries,
  });
  const commandConsumer = new NatsCommandConsumer(connectedBroker.js, processor, {
    stream: config.commandsStream,
    consumer: config.consumerName,
    sources: () => connectedBroker.commandSources,
    logger,
    onMissingConsumer: () => connectedBroker.topologyLost(),
  });
  consumer = commandConsumer;
  const startWork = async (): Promise<void> => {
    // Overdue timers start firing before the command consumer is up: a restart drains its backlog first.
    runningLoop.start();
    deadlineLoop.start();
    sweeper.start();
    await queriesAndRetention
      .start(connectedBroker.connection)
      .catch((error: unknown) => logger.error({ err: error }, "starting queries and retention failed"));
    await commandConsumer.start();
    const database = openedStorage.exclusive?.location ?? `schema ${config.storage.databaseSchema}`;
    logger.info(
      {
        commandsStream: config.commandsStream,
        eventsStream: config.eventsStream,
        consumer: config.consumerName,
        store: openedStorage.kind,
        owner,
        httpPort: address.port,
        database,
      },
      `timer service started: ready on HTTP port ${address.port}, ${openedStorage.kind} database ${database}`,
    );
  };
  const { exclusive } = openedStorage;
  if (exclusive === undefined) {
    await startWork();
  } else {
    lease = new JetStreamConsumerLease(connectedBroker.js, {
      bucket: LEASE_BUCKET,
      key: `${config.commandsStream}.${config.consumerName}`,
      holder: { storeId: exclusive.id, instance: owner, location: exclusive.location },
      ttlMs: config.storage.claimTtlMs,
      replicas: config.storage.streamReplicas,
      logger,
      onAcquired: () => void startWork(),
      // Another database took the consumer while this one was cut off: never work on both.
      onLost: () =>
        void Promise.all([commandConsumer.stop(), runningLoop.stop(), deadlineLoop.stop(), sweeper.stop(), queriesAndRetention.stop()]),
    });
    lease.start();
  }

  return {
    http: address,
    async stop() {
      // Awaited just before the store closes: a count in hand must not hold up the rest.
      const gaugesStopped = Promise.all([brokerGauge.stop(), pendingRefresh?.stop()]);
      stopStorageWatch();
      await commandConsumer.stop();
      await runningLoop.stop();
      await catchUps.close();
      await deadlineLoop.stop();
      await sweeper.stop();
      await queriesAndRetention.stop();
      await lease?.stop();
      await store
        .releaseClaims(owner)
        .catch((error: unknown) => logger.warn({ err: error }, "releasing claims failed; they expire by themselves"));
      await connectedBroker.close();
      acks.close();
      await gaugesStopped;
      await openedStorage.close();
      await http.close();
      // Last, so that the spans of the final batch go out too.
      await tracing.shutdown();
    },
  };
}
