import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { CommandRecord, TimerHistory, TimerPlan } from "./history.js";
import type { Prng } from "./prng.js";
import type { ReadBackPoller } from "./read-back.js";

const PUBLISH_TIMEOUT_MS = 5_000;
/** A command whose ack did not come is re-sent with the same Nats-Msg-Id (the stream drops a copy) this often. */
const PUBLISH_ATTEMPTS = 6;
/** A cancel or reschedule goes out at least this long before the due time it changes. */
const CHANGE_LEAD_MS = 4_000;
export const RECURRING_PERIODS_MS = [3_000, 5_000, 7_000] as const;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

interface MutableTimer {
  serviceCallId: string;
  plan: TimerPlan;
  commands: CommandRecord[];
  everyMs?: number;
  readBack?: TimerHistory["readBack"];
}

/**
 * The workload: one-shot timers (some cancelled, some rescheduled before they fall due) at `rate`
 * per second, and a few recurring timers; every command with its timestamp and when the commands
 * stream accepted it. Commands carry the producer's (real) clock as `timestampMs`.
 */
export class ChaosProducer {
  readonly timers: MutableTimer[] = [];
  private readonly js: JetStreamClient;
  private readonly inFlight = new Set<Promise<void>>();
  private sequence = 0;

  constructor(
    connection: NatsConnection,
    private readonly tenantId: string,
    private readonly prng: Prng,
    private readonly readBacks: ReadBackPoller,
  ) {
    this.js = jetstream(connection, { timeout: PUBLISH_TIMEOUT_MS });
  }

  async startRecurring(): Promise<void> {
    const firstDueMs = Date.now() + 2_000;
    await Promise.all(
      RECURRING_PERIODS_MS.map(async (everyMs, i) => {
        const timer = this.add(`recurring-${i}`, "recurring");
        timer.everyMs = everyMs;
        await this.schedule(timer, firstDueMs, { everyMs });
      }),
    );
  }

  /** Starts a new timer every 1/rate s until `untilMs`; resolves when every command has an outcome. */
  async run(ratePerSecond: number, untilMs: number): Promise<void> {
    const intervalMs = 1000 / ratePerSecond;
    let nextMs = Date.now();
    while (nextMs < untilMs) {
      this.track(this.one());
      nextMs += intervalMs;
      await sleep(nextMs - Date.now());
    }
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  /** The latest due time any one-shot timer was given. */
  get lastDueMs(): number {
    return Math.max(0, ...this.timers.flatMap((t) => t.commands.map((c) => (t.plan === "recurring" ? 0 : (c.dueAtMs ?? 0)))));
  }

  private async one(): Promise<void> {
    const roll = this.prng.next();
    const plan: TimerPlan = roll < 0.6 ? "once" : roll < 0.8 ? "cancel" : "reschedule";
    const timer = this.add(`${plan}-${this.sequence++}`, plan);
    const now = Date.now();
    if (plan === "once") return void (await this.schedule(timer, now + this.prng.int(1_000, 20_000)));
    const dueAtMs = now + this.prng.int(CHANGE_LEAD_MS + 2_000, 20_000);
    const changeAtMs = now + this.prng.int(500, dueAtMs - now - CHANGE_LEAD_MS);
    const newDueOffsetMs = this.prng.int(1_000, 20_000);
    if (!(await this.schedule(timer, dueAtMs))) return;
    await sleep(changeAtMs - Date.now());
    const newDueAtMs = plan === "cancel" ? undefined : Date.now() + newDueOffsetMs;
    const accepted = newDueAtMs === undefined ? await this.cancel(timer) : await this.schedule(timer, newDueAtMs);
    if (accepted) {
      const change = plan === "cancel" ? "cancel" : "reschedule";
      this.readBacks.watch(timer.serviceCallId, change, newDueAtMs, (readBack) => (timer.readBack = readBack));
    }
  }

  private add(serviceCallId: string, plan: TimerPlan): MutableTimer {
    const timer: MutableTimer = { serviceCallId, plan, commands: [] };
    this.timers.push(timer);
    return timer;
  }

  private schedule(timer: MutableTimer, dueAtMs: number, repeat?: { everyMs: number }): Promise<boolean> {
    const payload = {
      serviceCallId: timer.serviceCallId,
      dueAt: new Date(dueAtMs).toISOString(),
      ...(repeat === undefined ? {} : { repeat }),
    };
    return this.send(timer, "schedule", payload, dueAtMs);
  }

  private cancel(timer: MutableTimer): Promise<boolean> {
    return this.send(timer, "cancel", { serviceCallId: timer.serviceCallId }, undefined);
  }

  private async send(
    timer: MutableTimer,
    kind: "schedule" | "cancel",
    payload: Record<string, unknown>,
    dueAtMs: number | undefined,
  ): Promise<boolean> {
    const timestampMs = Date.now();
    const id = `${kind}-${timer.serviceCallId}-${timer.commands.length}`;
    const type = kind === "schedule" ? "ScheduleTimer" : "CancelTimer";
    const body = JSON.stringify({ id, type, tenantId: this.tenantId, timestampMs, payload: { tenantId: this.tenantId, ...payload } });
    const record: { kind: typeof kind; timestampMs: number; acceptedAtMs: number | undefined; dueAtMs?: number } = {
      kind,
      timestampMs,
      acceptedAtMs: undefined,
      ...(dueAtMs === undefined ? {} : { dueAtMs }),
    };
    timer.commands.push(record);
    for (let attempt = 0; attempt < PUBLISH_ATTEMPTS; attempt++) {
      try {
        await this.js.publish(`timer.commands.${kind}.${this.tenantId}`, body, { msgID: id, timeout: PUBLISH_TIMEOUT_MS });
        record.acceptedAtMs = Date.now();
        return true;
      } catch {
        await sleep(500);
      }
    }
    return false;
  }

  private track(work: Promise<void>): void {
    const tracked = work.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }
}
