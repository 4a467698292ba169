// Only the configuration is imported up front: the rest (NATS, SQLite, Postgres, Drizzle,
// prom-client…) is most of the start-up time, and an invalid variable must be reported before it.
import { ConfigError, loadConfig } from "../config/config.js";
import { systemClock } from "../adapters/clock/system-clock.js";
import { exitWhenParentDies } from "./parent-watch.js";
import type { RunningTimerService } from "./service.js";

/** Graceful shutdown must end within the contract's 10 s; past this the process exits anyway. */
const SHUTDOWN_DEADLINE_MS = 8_000;

export async function runTimerService(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  let config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`timer-service: invalid configuration: ${error.message}\n`);
    process.exit(2);
  }
  const { createLogger } = await import("../adapters/logging/pino-logger.js");
  const logger = createLogger(config.logLevel);
  let service: RunningTimerService | undefined;
  let stopping = false;

  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    setTimeout(() => {
      logger.error({ deadlineMs: SHUTDOWN_DEADLINE_MS }, "shutdown took too long; exiting");
      process.exit(0);
    }, SHUTDOWN_DEADLINE_MS).unref();
    const stopped = service === undefined ? Promise.resolve() : service.stop();
    stopped.then(
      () => {
        logger.info({}, "stopped");
        process.exit(0);
      },
      (error: unknown) => {
        // State is durable whatever failed here; the contract asks for exit 0 on SIGTERM.
        logger.error({ err: error }, "shutdown failed");
        process.exit(0);
      },
    );
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("unhandledRejection", (reason) => logger.error({ err: reason }, "unhandled rejection"));
  if (config.launchedByNpmStart) exitWhenParentDies(logger);

  try {
    const { startTimerService } = await import("./service.js");
    const { openStorage } = await import("../adapters/open-storage.js");
    const { otelExportConfigured } = await import("../adapters/tracing/otel-env.js");
    // The SDK starts only when an OTLP endpoint is set (CONTRACT §13).
    const tracing = otelExportConfigured(env)
      ? new (await import("../adapters/tracing/otel-tracing.js")).OtelTracing(env, logger)
      : undefined;
    const openConfiguredStorage = () => openStorage(config, logger, systemClock);
    service = await startTimerService(config, {
      openStorage: openConfiguredStorage,
      logger,
      clock: systemClock,
      ...(tracing === undefined ? {} : { tracing }),
    });
  } catch (error) {
    const { DatabaseSetupError } = await import("../adapters/postgres/database-setup-error.js");
    // A missing database or role is the operator's to fix: one line that says how, no stack trace.
    if (error instanceof DatabaseSetupError) logger.fatal({ code: error.code }, error.message);
    else logger.fatal({ err: error }, "timer service failed to start");
    process.exit(1);
  }
}
