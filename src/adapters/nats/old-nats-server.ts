import type { Logger } from "../../app/logger.js";

/** True for a nats-server before 2.10 (an unknown version is not judged). */
export function isBeforeNats210(version: string | undefined): boolean {
  const match = /^v?(\d+)\.(\d+)/.exec(version ?? "");
  if (match === null) return false;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  return major < 2 || (major === 2 && minor < 10);
}

/**
 * The service runs on nats-server 2.9, but without two things it relies on elsewhere: a start-up
 * warning says which, since nothing else would show it.
 */
export function warnOfOldNatsServer(version: string | undefined, logger: Logger): void {
  if (!isBeforeNats210(version)) return;
  logger.warn(
    { serverVersion: version },
    `nats-server ${version} is older than 2.10: durability is weaker (no jetstream sync_interval, so the broker fsyncs acked commands and events only every 2 minutes and a power loss can lose them) and ingest is not partitioned (TIMER_COMMAND_PARTITIONS is ignored: one command consumer, so one tenant's flood of commands delays every other tenant's); upgrade nats-server to 2.10 or later`,
  );
}
