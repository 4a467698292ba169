import { readFileSync } from "node:fs";
import type { Registry } from "prom-client";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { TimerServiceConfig } from "../config/config.js";
import type { Clock } from "../app/clock.js";
import type { Logger } from "../app/logger.js";
import type { Storage } from "../app/storage.js";
import { TimerQueryService } from "../app/queries/timer-query-service.js";
import { RETENTION_INTERVAL_MS, RetentionLoop } from "../app/retention/retention-loop.js";
import { PrometheusQueryMetrics } from "../adapters/metrics/prometheus-query-metrics.js";
import { NatsQueryService } from "../adapters/nats/nats-query-service.js";
import { watchConfirmedTenants } from "../adapters/nats/confirmed-tenants.js";
import { timerQueryRoutes, type HttpRoutes } from "../adapters/http/timer-query-routes.js";
import { OperatorActions, type CommandSender } from "../app/admin/operator-actions.js";
import { PrometheusAdminMetrics } from "../adapters/metrics/prometheus-admin-metrics.js";

// src/composition/ and dist/composition/ are both two levels below the package root.
const VERSION = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;

export interface QueriesAndRetentionDeps {
  readonly storage: Storage;
  readonly config: TimerServiceConfig;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly registry: Registry;
}

/**
 * Queries (CONTRACT §9: NATS micro service, HTTP /v1 and the admin page) and retention (§7) for one
 * service instance; started and stopped by the composition root (src/service.ts).
 */
export class QueriesAndRetention {
  readonly routes: HttpRoutes;
  #nats: NatsQueryService | undefined;
  readonly #queryService: TimerQueryService;
  readonly #retentionLoop: RetentionLoop;
  #commandSender: CommandSender | undefined;
  #confirmedTenants: Subscription | undefined;

  constructor(private readonly deps: QueriesAndRetentionDeps) {
    const { config, clock, logger, registry } = deps;
    const { queries, retention } = deps.storage;
    const metrics = new PrometheusQueryMetrics(registry);
    this.#queryService = new TimerQueryService({ queries, clock, metrics, logger });
    // Operator actions (CONTRACT §14) publish commands once the broker is connected (attachCommandSender).
    const actions = new OperatorActions({
      queries,
      sender: () => this.#commandSender,
      clock,
      logger,
      metrics: new PrometheusAdminMetrics(registry),
    });
    this.routes = timerQueryRoutes({
      queries: this.#queryService,
      adminToken: config.adminToken,
      readToken: config.adminReadToken,
      actions,
    });
    const { retentionMs } = config.storage;
    // A short window (tests, demos) is swept often enough to be seen working; a long one once a minute.
    const intervalMs = Math.min(RETENTION_INTERVAL_MS, Math.max(1_000, Math.round(retentionMs / 4)));
    this.#retentionLoop = new RetentionLoop({ retention, clock, metrics, logger, retentionMs, intervalMs });
  }

  /** Where the HTTP actions publish their commands; until this is called they answer 503. */
  attachCommandSender(sender: CommandSender): void {
    this.#commandSender = sender;
  }

  /** A confirmed command of the tenant committed here (CONTRACT §19): `stats` answers shared before it are dropped. */
  commandConfirmed(tenantId: string): void {
    this.#queryService.commandConfirmed(tenantId);
  }

  /** Serves the NATS endpoints and starts retention: with the work, once this instance may work (SQLite lease). */
  async start(connection: NatsConnection): Promise<void> {
    // On a shared store other instances commit commands too: their outcomes tell which tenants changed.
    if (this.deps.storage.shared && this.#confirmedTenants === undefined) {
      this.#confirmedTenants = watchConfirmedTenants(connection, this.deps.config.subjectPrefix, (tenantId) =>
        this.#queryService.commandConfirmed(tenantId),
      );
    }
    this.#nats ??= await NatsQueryService.start(connection, this.#queryService, {
      subjectPrefix: this.deps.config.subjectPrefix,
      version: VERSION,
      logger: this.deps.logger,
    });
    this.#retentionLoop.start();
  }

  async stop(): Promise<void> {
    this.#confirmedTenants?.unsubscribe();
    this.#confirmedTenants = undefined;
    await this.#nats?.stop();
    this.#nats = undefined;
    await this.#retentionLoop.stop();
  }
}
