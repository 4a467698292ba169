import type { CommandOutcome, CommandType, DeliveryOutcome, TimerMetrics } from "../../../src/app/timer-metrics.js";

/** Keeps what the application reported, in the shape a test wants to assert on. */
export class RecordingMetrics implements TimerMetrics {
  /** `commandHandled` calls, one entry per command (a `count` > 1 repeats the entry). */
  readonly handled: { type: CommandType; outcome: CommandOutcome }[] = [];
  /** One entry per `timersFired` call: the lags of that call. */
  readonly fired: (readonly number[])[] = [];
  readonly publishFailures: number[] = [];
  /** `DueTimeMissed` published, in total. */
  missed = 0;
  readonly polls: { durationSeconds: number; endedAtMs: number }[] = [];
  /** Every `addPending` delta, in order. */
  readonly pendingDeltas: number[] = [];
  /** The gauge: `setPending` sets it, `addPending` moves it. */
  pending = 0;

  /** `commandRejected` calls: the codes. */
  readonly rejectedCodes: string[] = [];

  commandRejected(code: string): void {
    this.rejectedCodes.push(code);
  }

  commandHandled(type: CommandType, outcome: CommandOutcome, count = 1): void {
    for (let i = 0; i < count; i++) this.handled.push({ type, outcome });
  }

  timersFired(lagSeconds: readonly number[]): void {
    this.fired.push([...lagSeconds]);
  }

  timersMissed(count: number): void {
    this.missed += count;
  }

  publishFailed(count: number): void {
    this.publishFailures.push(count);
  }

  pollCompleted(durationSeconds: number, endedAtMs: number): void {
    this.polls.push({ durationSeconds, endedAtMs });
  }

  /** `deliveriesCounted` totals by outcome. */
  readonly deliveries: Record<DeliveryOutcome, number> = { completed: 0, retried: 0, failed: 0, timed_out: 0 };
  readonly deliveryDurations: number[] = [];

  deliveriesCounted(outcome: DeliveryOutcome, count: number): void {
    this.deliveries[outcome] += count;
  }

  deliveriesCompleted(durationSeconds: readonly number[]): void {
    this.deliveryDurations.push(...durationSeconds);
  }

  setPending(count: number): void {
    this.pending = count;
  }

  addPending(delta: number): void {
    this.pendingDeltas.push(delta);
    this.pending += delta;
  }

  /** How many commands were counted with this type and outcome. */
  count(type: CommandType, outcome: CommandOutcome): number {
    return this.handled.filter((h) => h.type === type && h.outcome === outcome).length;
  }

  get firedCount(): number {
    return this.fired.reduce((sum, lags) => sum + lags.length, 0);
  }

  get publishFailedCount(): number {
    return this.publishFailures.reduce((sum, n) => sum + n, 0);
  }
}
