import Database from "better-sqlite3";
import pg from "pg";
import { jetstreamManager } from "@nats-io/jetstream";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerClient } from "../support/timer-client.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { EventStreamReader, type StreamedDueEvent } from "../support/event-stream-reader.js";
import { commandConsumersState } from "../support/command-consumers.js";
import { waitUntil } from "../support/wait-for.js";

/** Shared by the fault tests: what they schedule, how they wait, what "early" means. */

export const TENANT = "fault";

/** What a fault test runs against: its own broker, the service, a producer and a stream reader. */
export interface FaultHarness {
  readonly nats: NatsServerProcess;
  readonly service: TimerServiceProcess;
  readonly client: TimerClient;
  readonly reader: EventStreamReader;
  dispose(): Promise<void>;
}

export async function startFaultHarness(serviceEnv: Record<string, string>): Promise<FaultHarness> {
  const nats = await NatsServerProcess.start();
  const service = await TimerServiceProcess.start(nats.url, serviceEnv);
  const client = await TimerClient.connect(nats.url);
  const reader = await EventStreamReader.start(nats.url);
  return {
    nats,
    service,
    client,
    reader,
    async dispose() {
      await reader.close();
      await client.close();
      await service.dispose();
      await nats.dispose();
    },
  };
}

export interface PlannedTimer {
  readonly serviceCallId: string;
  readonly dueAtMs: number;
}

/** `count` timers named `{prefix}-{i}`, due `fromMs` … `toMs` after `baseMs`, evenly spread. */
export function planTimers(prefix: string, count: number, baseMs: number, fromMs: number, toMs: number): PlannedTimer[] {
  return Array.from({ length: count }, (_, i) => ({
    serviceCallId: `${prefix}-${i}`,
    dueAtMs: baseMs + fromMs + Math.floor(((toMs - fromMs) * i) / Math.max(1, count - 1)),
  }));
}

/**
 * Publishes a ScheduleTimer for each timer with `concurrency` publishes in flight; resolves when the
 * commands stream acked every one. `onAcked` is told each acked timer.
 */
export async function scheduleAll(
  client: TimerClient,
  timers: readonly PlannedTimer[],
  options: { concurrency?: number; onAcked?: (timer: PlannedTimer) => void } = {},
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < timers.length) {
      const timer = timers[next++]!;
      await client.schedule(TENANT, timer.serviceCallId, new Date(timer.dueAtMs), { id: `cmd-${timer.serviceCallId}` });
      options.onAcked?.(timer);
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency ?? 100, timers.length) }, worker));
}

/** The durable command consumers' backlog: not yet delivered and delivered but not acked. */
export async function commandBacklog(client: TimerClient): Promise<{ pending: number; ackPending: number }> {
  const jsm = await jetstreamManager(client.connection);
  const { pending, ackPending } = await commandConsumersState(jsm);
  return { pending, ackPending };
}

/**
 * Waits until the service has acked every command (its consumer has no backlog), which it does only
 * after the commit, and its `timer_schedules_pending` gauge says `scheduled`.
 */
export async function waitUntilStored(
  client: TimerClient,
  service: TimerServiceProcess,
  scheduled: number,
  timeoutMs = 15_000,
): Promise<void> {
  let last = "";
  await waitUntil(
    async () => {
      const backlog = await commandBacklog(client);
      const pending = await service.metric("timer_schedules_pending");
      last = `consumer backlog ${JSON.stringify(backlog)}, timer_schedules_pending ${pending}`;
      return backlog.pending === 0 && backlog.ackPending === 0 && pending === scheduled;
    },
    timeoutMs,
    `service stored ${scheduled} timers`,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; last: ${last}`);
  });
}

/** Events that fired before their due time, by the service's clock (reachedAt) or the broker's (stored). */
export function earlyEvents(events: readonly StreamedDueEvent[]): StreamedDueEvent[] {
  return events.filter((event) => event.reachedAtMs < event.dueAtMs || event.storedAtMs < event.dueAtMs);
}

/** Events whose dueAt differs from the one the test scheduled for that timer. */
export function mismatchedEvents(events: readonly StreamedDueEvent[], timers: readonly PlannedTimer[]): StreamedDueEvent[] {
  const dueAt = new Map(timers.map((timer) => [timer.serviceCallId, timer.dueAtMs]));
  return events.filter((event) => dueAt.has(event.serviceCallId) && dueAt.get(event.serviceCallId) !== event.dueAtMs);
}

/**
 * The state of every timer in the service's store: its SQLite file (read while the service is
 * stopped), or its Postgres schema with TEST_TIMER_STORE=postgres.
 */
export async function storedTimerStatesOf(service: TimerServiceProcess): Promise<Map<string, string>> {
  if (service.env.TIMER_STORE !== "postgres") return storedTimerStates(service.env.TIMER_DB_PATH!);
  const db = new pg.Client({ connectionString: service.env.TIMER_DATABASE_URL });
  await db.connect();
  try {
    const { rows } = await db.query<{ id: string; state: string }>(
      `SELECT service_call_id AS id, state FROM "${service.env.TIMER_DATABASE_SCHEMA}".timer_schedules WHERE tenant_id = $1`,
      [TENANT],
    );
    return new Map(rows.map((row) => [row.id, row.state]));
  } finally {
    await db.end();
  }
}

/** The state of every timer in the service's SQLite file (read while the service is stopped). */
export function storedTimerStates(dbPath: string): Map<string, string> {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare("SELECT service_call_id AS id, state FROM timer_schedules WHERE tenant_id = ?").all(TENANT) as {
      id: string;
      state: string;
    }[];
    return new Map(rows.map((row) => [row.id, row.state]));
  } finally {
    db.close();
  }
}
