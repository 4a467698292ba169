/** The examples read the same variables as the service, with the same defaults. */
import { connectTimerClient, type TimerClient } from "@timer-service/client";

/** NATS server URL(s), comma-separated, as the service's TIMER_BROKER_URL. */
export function brokerUrls(): string[] {
  return (process.env.TIMER_BROKER_URL ?? "nats://127.0.0.1:4222")
    .split(",")
    .map((url) => url.trim())
    .filter((url) => url !== "");
}

/** Subject prefix and events stream: the service's TIMER_SUBJECT_PREFIX and TIMER_EVENTS_STREAM. */
export const SUBJECT_PREFIX = process.env.TIMER_SUBJECT_PREFIX ?? "timer";
export const EVENTS_STREAM = process.env.TIMER_EVENTS_STREAM ?? "TIMER_EVENTS";

/** A client for one tenant. A broker with credentials: add `user`/`pass`, `token` or `authenticator` here. */
export function connectTimers(tenantId: string, name: string): Promise<TimerClient> {
  return connectTimerClient({ servers: brokerUrls(), tenantId, subjectPrefix: SUBJECT_PREFIX, eventsStream: EVENTS_STREAM, name });
}

/** One line for a person, with a hint when the streams are missing (the service creates them). */
export function explain(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: string }).code;
  return code === "NO_RESPONDERS" || code === "TIMEOUT" || /stream not found/i.test(message)
    ? `${message} (is the service running? it creates the streams)`
    : message;
}
