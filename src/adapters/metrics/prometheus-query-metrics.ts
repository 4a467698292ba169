import { Counter, type Registry } from "prom-client";
import type { QueryEndpoint, QueryMetrics, QueryOutcome } from "../../app/queries/timer-query-service.js";
import type { RetentionMetrics } from "../../app/retention/retention-sweep.js";

const ENDPOINTS: readonly QueryEndpoint[] = ["get", "list", "stats"];
const OUTCOMES: readonly QueryOutcome[] = ["ok", "error"];

/** `timer_queries_total` and `timer_schedules_deleted_total` (CONTRACT §8), on the service's registry. */
export class PrometheusQueryMetrics implements QueryMetrics, RetentionMetrics {
  readonly #queries: Counter<"endpoint" | "outcome">;
  readonly #deleted: Counter;

  constructor(registry: Registry) {
    this.#queries = new Counter({
      name: "timer_queries_total",
      help: "Queries answered (NATS and HTTP), by endpoint (get, list, stats) and outcome (ok, error).",
      labelNames: ["endpoint", "outcome"] as const,
      registers: [registry],
    });
    this.#deleted = new Counter({
      name: "timer_schedules_deleted_total",
      help: "Timers in a final state deleted by retention (TIMER_RETENTION_HOURS).",
      registers: [registry],
    });
    for (const endpoint of ENDPOINTS) for (const outcome of OUTCOMES) this.#queries.inc({ endpoint, outcome }, 0);
  }

  queryAnswered(endpoint: QueryEndpoint, outcome: QueryOutcome): void {
    this.#queries.inc({ endpoint, outcome });
  }

  timersDeleted(count: number): void {
    this.#deleted.inc(count);
  }
}
