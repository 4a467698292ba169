import type { AddressInfo } from "node:net";
import type { TimerServiceConfig } from "./config.js";
import type { Clock } from "./app/clock.js";
import type { Logger } from "./app/logger.js";
import { CommandDecoder } from "./app/commands/command-decoder.js";
import { TimerCommandProcessor } from "./app/commands/timer-command-processor.js";
import { DueTimerWorker } from "./app/firing/due-timer-worker.js";
import { DueTimerLoop } from "./app/firing/due-timer-loop.js";
import { openSqliteTimerStore } from "./adapters/sqlite/sqlite-timer-store.js";
import { PrometheusTimerMetrics } from "./adapters/metrics/prometheus-timer-metrics.js";
import { HealthHttpServer } from "./adapters/http/health-http-server.js";
import { NatsBroker } from "./adapters/nats/nats-broker.js";
import { JetStreamEventPublisher } from "./adapters/nats/jetstream-event-publisher.js";
import { JetStreamAckTracker } from "./adapters/nats/jetstream-ack-tracker.js";
import { NatsCommandConsumer } from "./adapters/nats/nats-command-consumer.js";

/** How long a DueTimeReached or CommandRejected publish waits for the stream's ack. */
const PUBLISH_ACK_TIMEOUT_MS = 5_000;
const WAL_CHECKPOINT_INTERVAL_MS = 1_000;
const SQLITE_BUSY_TIMEOUT_MS = 100;

export interface RunningTimerService {
  readonly http: AddressInfo;
  /** Stops consuming, finishes the batch in hand, closes broker and storage. */
  stop(): Promise<void>;
}

/**
 * The composition root: builds the adapters and the application from plain constructors and starts
 * them in dependency order. Storage and HTTP come first so that /healthz answers and /readyz says
 * 503 while the broker is still being reached.
 */
export async function startTimerService(config: TimerServiceConfig, deps: { logger: Logger; clock: Clock }): Promise<RunningTimerService> {
  const { logger, clock } = deps;
  const store = openSqliteTimerStore({
    path: config.dbPath,
    synchronous: config.dbSynchronous,
    // better-sqlite3 waits for a lock on the only thread: a long wait would freeze HTTP and the
    // broker connection. Short, and the nak-and-redeliver retry does the waiting instead.
    busyTimeoutMs: SQLITE_BUSY_TIMEOUT_MS,
    backgroundCheckpoint: { intervalMs: WAL_CHECKPOINT_INTERVAL_MS, onError: (message) => logger.warn({ error: message }, "WAL checkpoint failed") },
  });
  const metrics = new PrometheusTimerMetrics();
  metrics.setPending(await store.countScheduled());

  let broker: NatsBroker | undefined;
  let consumer: NatsCommandConsumer | undefined;
  const http = new HealthHttpServer(metrics.registry, [
    { name: "storage", ok: () => store.isWritable() },
    { name: "broker", ok: () => broker?.isConnected === true },
    { name: "streams", ok: () => broker?.topologyReady === true && consumer?.pulling === true },
  ]);
  const address = await http.listen(config.httpPort, config.httpHost);
  logger.info({ host: address.address, port: address.port }, "http listening");

  let loop: DueTimerLoop | undefined;
  try {
    broker = await NatsBroker.connect({
      servers: config.brokerUrls,
      credentials: config.natsCredentials,
      topology: config,
      logger,
      onReconnect: () => loop?.wake(),
      onTopologyRecreated: () => void consumer?.restart(),
    });
  } catch (error) {
    await http.close();
    await store.close();
    throw error;
  }
  const connectedBroker = broker;
  metrics.brokerConnected.set(1);
  const brokerGauge = setInterval(() => metrics.brokerConnected.set(connectedBroker.isConnected && connectedBroker.topologyReady ? 1 : 0), 1_000);
  brokerGauge.unref();

  const acks = new JetStreamAckTracker(connectedBroker.connection, PUBLISH_ACK_TIMEOUT_MS);
  const publisher = new JetStreamEventPublisher(acks, {
    subjectPrefix: config.subjectPrefix,
    eventsStream: config.eventsStream,
    clock,
  });
  const worker = new DueTimerWorker({ store, publisher, clock, metrics, logger, batchSize: config.batchSize });
  loop = new DueTimerLoop({ worker, store, clock, logger, pollingIntervalMs: config.pollingIntervalMs });
  const runningLoop = loop;
  const processor = new TimerCommandProcessor({
    decoder: new CommandDecoder({ subjectPrefix: config.subjectPrefix, maxHorizonDays: config.maxHorizonDays, clock }),
    store,
    publisher,
    clock,
    metrics,
    logger,
    onScheduled: (dueAtMs) => runningLoop.wake(dueAtMs),
  });
  const commandConsumer = new NatsCommandConsumer(connectedBroker.js, processor, {
    stream: config.commandsStream,
    consumer: config.consumerName,
    logger,
    onMissingConsumer: () => connectedBroker.topologyLost(),
  });
  // Overdue timers start firing before the command consumer is up: a restart drains its backlog first.
  runningLoop.start();
  consumer = commandConsumer;
  await commandConsumer.start();
  logger.info(
    { commandsStream: config.commandsStream, eventsStream: config.eventsStream, consumer: config.consumerName, dbPath: config.dbPath },
    "timer service started",
  );

  return {
    http: address,
    async stop() {
      clearInterval(brokerGauge);
      await commandConsumer.stop();
      await runningLoop.stop();
      await connectedBroker.close();
      acks.close();
      await store.close();
      await http.close();
    },
  };
}
