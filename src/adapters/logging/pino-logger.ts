import { pino, type Logger as PinoLogger } from "pino";
import type { LogLevel } from "../../config/config.js";

/** JSON lines on stdout (CONTRACT §4). Credentials never reach a log line: nothing logs the config's secrets. */
export function createLogger(level: LogLevel): PinoLogger {
  return pino({
    level,
    base: { service: "timer-service" },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  });
}
