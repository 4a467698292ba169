import type { Logger } from "../../../src/app/logger.js";

export type LogLevel = "debug" | "info" | "warn" | "error";

export interface LogEntry {
  readonly level: LogLevel;
  readonly fields: Record<string, unknown>;
  readonly message: string | undefined;
}

/** Keeps every log line so a test can check what was logged, and at which level. */
export class RecordingLogger implements Logger {
  readonly entries: LogEntry[] = [];

  debug(fields: object, message?: string): void {
    this.record("debug", fields, message);
  }
  info(fields: object, message?: string): void {
    this.record("info", fields, message);
  }
  warn(fields: object, message?: string): void {
    this.record("warn", fields, message);
  }
  error(fields: object, message?: string): void {
    this.record("error", fields, message);
  }

  at(level: LogLevel): LogEntry[] {
    return this.entries.filter((entry) => entry.level === level);
  }

  private record(level: LogLevel, fields: object, message: string | undefined): void {
    this.entries.push({ level, fields: fields as Record<string, unknown>, message });
  }
}

/** Drops every log line. */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
};
