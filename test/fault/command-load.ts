import type { TimerClient } from "../support/timer-client.js";
import type { TimerServiceProcess } from "../support/timer-service-process.js";
import { TENANT, type PlannedTimer } from "./fault-support.js";

/** Every CANCEL_EVERY-th timer is scheduled, then cancelled one millisecond later: the cancel wins. */
const CANCEL_EVERY = 4;
/** Every STALE_EVERY-th timer is cancelled first, then "scheduled" at the same timestampMs: ignored (§3.2). */
const STALE_EVERY = 7;

/**
 * Commands that keep arriving while a fault or an upgrade runs: one ScheduleTimer about every
 * `paceMs`, each due `dueLeadMs` after it is sent, and among them cancels that must win and stale
 * schedules that must be ignored (CONTRACT §3.2, §3.5). What the commands stream acked is recorded:
 * every such command must take effect, whatever happens to the service or its database.
 */
export class CommandLoad {
  /** Timers whose commands the stream acked and that must fire. */
  readonly mustFire: PlannedTimer[] = [];
  /** Timers whose commands the stream acked and that must never fire. */
  readonly mustNotFire: PlannedTimer[] = [];
  #stopped = false;
  #sent = 0;
  readonly #running: Promise<void>;

  constructor(
    private readonly client: TimerClient,
    private readonly prefix: string,
    private readonly dueLeadMs: number,
    private readonly paceMs = 20,
  ) {
    this.#running = this.#run();
  }

  get acked(): number {
    return this.mustFire.length + this.mustNotFire.length;
  }

  /** Stops sending and resolves when the last command is acked by the stream. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      const i = this.#sent++;
      const serviceCallId = `${this.prefix}-${i}`;
      const timestampMs = Date.now();
      const timer = { serviceCallId, dueAtMs: timestampMs + this.dueLeadMs };
      const dueAt = new Date(timer.dueAtMs);
      if (i % STALE_EVERY === 0) {
        await this.client.cancel(TENANT, serviceCallId, { timestampMs, id: `cancel-${serviceCallId}` });
        await this.client.schedule(TENANT, serviceCallId, dueAt, { timestampMs, id: `cmd-${serviceCallId}` });
        this.mustNotFire.push(timer);
      } else if (i % CANCEL_EVERY === 0) {
        await this.client.schedule(TENANT, serviceCallId, dueAt, { timestampMs, id: `cmd-${serviceCallId}` });
        await this.client.cancel(TENANT, serviceCallId, { timestampMs: timestampMs + 1, id: `cancel-${serviceCallId}` });
        this.mustNotFire.push(timer);
      } else {
        await this.client.schedule(TENANT, serviceCallId, dueAt, { timestampMs, id: `cmd-${serviceCallId}` });
        this.mustFire.push(timer);
      }
      // Paced, not flooded: the test is about what survives, not about throughput.
      await new Promise((r) => setTimeout(r, this.paceMs));
    }
  }
}

/** `/readyz`'s status, or 0 when the service does not answer within a second. */
export async function readyzStatus(service: TimerServiceProcess): Promise<number> {
  try {
    return (await fetch(`${service.baseUrl}/readyz`, { signal: AbortSignal.timeout(1_000) })).status;
  } catch {
    return 0;
  }
}

/** Polls `/readyz` until it answers `status`; returns the milliseconds since `sinceMs`. */
export async function msUntilReadyz(service: TimerServiceProcess, status: number, sinceMs: number, timeoutMs: number): Promise<number> {
  for (;;) {
    const answer = await readyzStatus(service);
    if (answer === status) return Date.now() - sinceMs;
    if (Date.now() - sinceMs > timeoutMs) throw new Error(`/readyz not ${status} within ${timeoutMs} ms (last ${answer})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
