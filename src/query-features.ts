import { readFileSync } from "node:fs";
import type pg from "pg";
import type { Registry } from "prom-client";
import type { NatsConnection } from "@nats-io/transport-node";
import type { TimerServiceConfig } from "./config.js";
import type { Clock } from "./app/clock.js";
import type { Logger } from "./app/logger.js";
import type { TimerStore } from "./app/timer-store.js";
import type { TimerQueries } from "./app/queries/timer-queries.js";
import { TimerQueryService } from "./app/queries/timer-query-service.js";
import type { TimerRetention } from "./app/retention/timer-retention.js";
import { RETENTION_INTERVAL_MS, RetentionLoop } from "./app/retention/retention-loop.js";
import { MemoryTimerStore } from "./adapters/memory/memory-timer-store.js";
import { MemoryTimerQueries } from "./adapters/memory/memory-timer-queries.js";
import { MemoryTimerRetention } from "./adapters/memory/memory-timer-retention.js";
import { SqliteTimerStore } from "./adapters/sqlite/sqlite-timer-store.js";
import { SqliteTimerQueries } from "./adapters/sqlite/sqlite-timer-queries.js";
import { SqliteTimerRetention } from "./adapters/sqlite/sqlite-timer-retention.js";
import { createPostgresPool } from "./adapters/postgres/postgres-pool.js";
import { PostgresTimerQueries } from "./adapters/postgres/postgres-timer-queries.js";
import { PostgresTimerRetention } from "./adapters/postgres/postgres-timer-retention.js";
import { PrometheusQueryMetrics } from "./adapters/metrics/prometheus-query-metrics.js";
import { NatsQueryService } from "./adapters/nats/nats-query-service.js";
import { timerQueryRoutes, type HttpRoutes } from "./adapters/http/timer-query-routes.js";
import { OperatorActions, type CommandSender } from "./app/admin/operator-actions.js";
import { PrometheusAdminMetrics } from "./adapters/metrics/prometheus-admin-metrics.js";

/** Connections of the queries' own Postgres pool: queries never wait behind firing, nor firing behind them. */
const QUERY_POOL_CONNECTIONS = 2;

// src/ and dist/ are both one level below the package root.
const VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

export interface QueryFeaturesDeps {
  readonly store: TimerStore;
  readonly config: TimerServiceConfig;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly registry: Registry;
}

/** The adapters of the queries and retention ports for the store in use. */
function adaptersFor(deps: QueryFeaturesDeps): { queries: TimerQueries; retention: TimerRetention; pool?: pg.Pool } {
  const { store, config, logger } = deps;
  if (store instanceof SqliteTimerStore)
    return { queries: new SqliteTimerQueries(store.database), retention: new SqliteTimerRetention(store.database) };
  if (store instanceof MemoryTimerStore) return { queries: new MemoryTimerQueries(store), retention: new MemoryTimerRetention(store) };
  const { databaseUrl, databaseSchema } = config.storage;
  if (config.storage.store !== "postgres" || databaseUrl === undefined) throw new Error("queries: no adapter for this store");
  const pool = createPostgresPool({
    url: databaseUrl,
    schema: databaseSchema,
    maxConnections: QUERY_POOL_CONNECTIONS,
    timeoutMs: config.storage.databaseTimeoutMs,
    onIdleError: (error) => logger.warn({ error: error.message }, "Postgres connection of the queries lost; the pool reconnects"),
  });
  return { queries: new PostgresTimerQueries(pool), retention: new PostgresTimerRetention(pool), pool };
}

/**
 * Queries (CONTRACT §9: NATS micro service, HTTP /v1 and the admin page) and retention (§7) for one
 * service instance; started and stopped by the composition root (src/service.ts).
 */
export class QueryFeatures {
  readonly routes: HttpRoutes;
  #nats: NatsQueryService | undefined;
  readonly #queryService: TimerQueryService;
  readonly #retentionLoop: RetentionLoop;
  readonly #pool: pg.Pool | undefined;
  #commandSender: CommandSender | undefined;

  constructor(private readonly deps: QueryFeaturesDeps) {
    const { config, clock, logger, registry } = deps;
    const adapters = adaptersFor(deps);
    this.#pool = adapters.pool;
    const metrics = new PrometheusQueryMetrics(registry);
    this.#queryService = new TimerQueryService({ queries: adapters.queries, clock, metrics, logger });
    // Operator actions (CONTRACT §14) publish commands once the broker is connected (attachCommandSender).
    const actions = new OperatorActions({
      queries: adapters.queries,
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
    this.#retentionLoop = new RetentionLoop({ retention: adapters.retention, clock, metrics, logger, retentionMs, intervalMs });
  }

  /** Where the HTTP actions publish their commands; until this is called they answer 503. */
  attachCommandSender(sender: CommandSender): void {
    this.#commandSender = sender;
  }

  /** Serves the NATS endpoints and starts retention: with the work, once this instance may work (SQLite lease). */
  async start(connection: NatsConnection): Promise<void> {
    this.#nats ??= await NatsQueryService.start(connection, this.#queryService, {
      subjectPrefix: this.deps.config.subjectPrefix,
      version: VERSION,
      logger: this.deps.logger,
    });
    this.#retentionLoop.start();
  }

  async stop(): Promise<void> {
    await this.#nats?.stop();
    this.#nats = undefined;
    await this.#retentionLoop.stop();
    await this.#pool?.end().catch(() => undefined);
  }
}
