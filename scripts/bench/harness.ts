/**
 * Shared harness of `npm run bench`: processes (nats-server, the service), a NATS client, bounded
 * publishing and waiting, Prometheus scraping, /proc CPU and memory readings, direct SQLite
 * population, and statistics. Every wait here has a deadline; every process and folder a scenario
 * creates is registered on its Scope, which the runner closes even when the scenario fails.
 */
export * from "./harness/log.js";
export * from "./harness/scope.js";
export * from "./harness/context.js";
export * from "./harness/processes.js";
export * from "./harness/bench-client.js";
export * from "./harness/prometheus.js";
export * from "./harness/proc.js";
export * from "./harness/populate.js";
export * from "./harness/statistics.js";
export * from "./harness/machine.js";
export * from "./harness/ingest-then-fire.js";
export * from "./harness/in-process.js";
