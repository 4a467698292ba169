import type { Logger } from "../../app/logger.js";
import { redactUrl } from "../../config/broker-url.js";
import { UnreachableLog } from "../unreachable-log.js";

/** At most one "unreachable" warn line per this interval, however fast the client retries. */
export const UNREACHABLE_LOG_INTERVAL_MS = 10_000;

/** The unreachable log of the NATS broker: its server URLs, redacted. */
export class BrokerUnreachableLog extends UnreachableLog {
  constructor(logger: Logger, servers: readonly string[], now: () => number = Date.now, intervalMs = UNREACHABLE_LOG_INTERVAL_MS) {
    super(logger, { servers: servers.map(redactUrl) }, "NATS broker unreachable; still trying", now, intervalMs);
  }
}
