import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { NatsCredentials } from "../../config/config.js";
import type { Logger } from "../../app/logger.js";
import { connectToNats } from "./nats-connection.js";
import { BrokerUnreachableLog } from "./broker-unreachable-log.js";
import { redactUrl } from "../../config/broker-url.js";
import { ensureTimerTopology, type TimerTopology } from "./jetstream-topology.js";
import { commandSources, type CommandSource } from "./command-partitions.js";
import { PeriodicLoop } from "../../app/periodic-loop.js";
import { systemClock } from "../clock/system-clock.js";

const TOPOLOGY_RETRY_MS = 1_000;
/** How often the streams and the consumer are checked (and recreated) while connected. */
const TOPOLOGY_CHECK_MS = 5_000;

/**
 * The service's connection to NATS: tracks whether it is connected and whether the streams and the
 * consumer are in place (readiness), and puts them back after a reconnect — a broker that restarted
 * with an empty store gets them recreated.
 */
export class NatsBroker {
  connected = true;
  topologyReady = false;
  /** The command consumers to pull, as the last ensure found them. */
  commandSources: readonly CommandSource[];
  readonly js: JetStreamClient;
  private ensuring: Promise<void> | undefined;
  private closing = false;
  /** The first ensure (at start) creates what is missing without calling onTopologyRecreated. */
  private started = false;
  private readonly checker: PeriodicLoop;
  private readonly unreachable: BrokerUnreachableLog;

  private constructor(
    readonly connection: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly topology: TimerTopology,
    private readonly logger: Logger,
    servers: readonly string[],
    private readonly onReconnect: () => void,
    private readonly onTopologyRecreated: () => void,
  ) {
    this.js = jetstream(connection, { timeout: 5_000 });
    this.commandSources = commandSources(topology.subjectPrefix, topology.consumerName, 1);
    this.unreachable = new BrokerUnreachableLog(logger, servers);
    void this.watchStatus();
    // An operator may delete the consumer or a stream at any time: recreate it within seconds.
    this.checker = new PeriodicLoop(systemClock, TOPOLOGY_CHECK_MS, async () => {
      if (this.connected && this.ensuring === undefined) await this.ensureTopology();
    });
    this.checker.start();
  }

  /** Connects (waiting for the broker if it is not up yet) and ensures the topology. */
  static async connect(options: {
    servers: readonly string[];
    credentials: NatsCredentials;
    topology: TimerTopology;
    logger: Logger;
    onReconnect: () => void;
    /** Streams or consumer were missing and have been recreated: pulls must start over. */
    onTopologyRecreated: () => void;
  }): Promise<NatsBroker> {
    const connection = await connectToNats(options.servers, options.credentials, options.logger);
    options.logger.info({ server: redactUrl(connection.getServer()), version: connection.info?.version }, "connected to NATS");
    // No API check here: JetStream may still be starting; ensureTopology retries until it answers.
    const jsm = await jetstreamManager(connection, { timeout: 5_000, checkAPI: false });
    const broker = new NatsBroker(
      connection,
      jsm,
      options.topology,
      options.logger,
      options.servers,
      options.onReconnect,
      options.onTopologyRecreated,
    );
    await broker.ensureTopology();
    return broker;
  }

  /** Ensures streams and consumer, retrying until it succeeds or the broker is closed. */
  ensureTopology(): Promise<void> {
    this.ensuring ??= (async () => {
      try {
        while (!this.closing) {
          try {
            const { created, sources } = await ensureTimerTopology(this.jsm, {
              ...this.topology,
              serverVersion: this.connection.info?.version,
            });
            this.commandSources = sources;
            const wasReady = this.topologyReady;
            this.topologyReady = true;
            if (created && this.started) {
              this.logger.warn({ wasReady }, "JetStream streams or consumer were missing and have been recreated");
              this.onTopologyRecreated();
            }
            this.started = true;
            return;
          } catch (error) {
            this.topologyReady = false;
            this.logger.warn({ err: error }, "JetStream streams or consumer not available yet; retrying");
            await new Promise((r) => setTimeout(r, TOPOLOGY_RETRY_MS));
          }
        }
      } finally {
        this.ensuring = undefined;
      }
    })();
    return this.ensuring;
  }

  /** The consumer or a stream went missing (e.g. the broker lost its store). */
  topologyLost(): void {
    this.topologyReady = false;
    // An ensure already under way may have checked before the loss: run a fresh one after it.
    const current = this.ensuring ?? Promise.resolve();
    void current.then(() => this.ensureTopology());
  }

  /** Connected now (not between a disconnect and a reconnect, not closed). */
  get isConnected(): boolean {
    return this.connected && !this.connection.isClosed();
  }

  async close(): Promise<void> {
    this.closing = true;
    void this.checker.stop();
    if (this.connection.isClosed()) return;
    // drain flushes the acks and publishes still buffered; close is the fallback when it stalls.
    await Promise.race([this.connection.drain(), new Promise((r) => setTimeout(r, 2_000))]).catch(() => undefined);
    await this.connection.close().catch(() => undefined);
  }

  private async watchStatus(): Promise<void> {
    for await (const status of this.connection.status()) {
      if (status.type === "disconnect") {
        this.connected = false;
        // Unknown until checked again after the reconnect (the broker may come back empty).
        this.topologyReady = false;
        this.logger.warn({ server: redactUrl(status.server) }, "disconnected from NATS; reconnecting");
        this.unreachable.outageLogged();
      } else if (status.type === "reconnecting") {
        this.unreachable.attempt();
      } else if (status.type === "reconnect") {
        this.connected = true;
        this.logger.info({ server: redactUrl(status.server), attempts: this.unreachable.reached() }, "reconnected to NATS");
        void this.ensureTopology().then(() => this.onReconnect());
      }
    }
  }
}
