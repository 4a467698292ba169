import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { CommandOutcome, CommandType, DeliveryOutcome, TimerMetrics } from "../../app/timer-metrics.js";

const COMMAND_TYPES: readonly CommandType[] = [
  "ScheduleTimer",
  "CancelTimer",
  "CancelTimersByPrefix",
  "TimerCompleted",
  "TimerFailed",
  "RetryTimer",
  "unknown",
];
const DELIVERY_OUTCOMES: readonly DeliveryOutcome[] = ["completed", "retried", "failed", "timed_out"];
const OUTCOMES: readonly CommandOutcome[] = ["accepted", "ignored", "rejected"];

/** The metrics of CONTRACT §5 on a prom-client registry of their own, plus process defaults. */
export class PrometheusTimerMetrics implements TimerMetrics {
  readonly registry = new Registry();
  private readonly commands = new Counter({
    name: "timer_commands_received_total",
    help: "Commands received, by command type and outcome (accepted, ignored, rejected).",
    labelNames: ["type", "outcome"] as const,
    registers: [this.registry],
  });
  private readonly rejections = new Counter({
    name: "timer_commands_rejected_total",
    help: "Commands refused with a CommandRejected, by rejection code (per-tenant figures: the stats query and the rejection events).",
    labelNames: ["code"] as const,
    registers: [this.registry],
  });
  private readonly processed = new Counter({
    name: "timer_schedules_processed_total",
    help: "Timers published as DueTimeReached and marked Reached.",
    registers: [this.registry],
  });
  private readonly missed = new Counter({
    name: "timer_schedules_missed_total",
    help: "DueTimeMissed published: an occurrence more than its maxLatenessMs late.",
    registers: [this.registry],
  });
  private readonly pollDuration = new Histogram({
    name: "timer_polling_duration_seconds",
    help: "Duration of one poll of the due-timer worker: query, publish, mark.",
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  private readonly fireLag = new Histogram({
    name: "timer_fire_lag_seconds",
    help: "reachedAt - dueAt of fired timers.",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });
  private readonly pending = new Gauge({
    name: "timer_schedules_pending",
    help: "Timers in state Scheduled.",
    registers: [this.registry],
  });
  private readonly lastPoll = new Gauge({
    name: "timer_last_poll_timestamp_seconds",
    help: "Unix time at which the last poll completed.",
    registers: [this.registry],
  });
  private readonly publishFailures = new Counter({
    name: "timer_publish_failures_total",
    help: "DueTimeReached publishes that failed (the timer stays Scheduled and is retried).",
    registers: [this.registry],
  });
  private readonly deliveries = new Counter({
    name: "timer_deliveries_total",
    help: "Tracked deliveries (CONTRACT §11) by outcome: completed, retried, failed, timed_out.",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  private readonly deliveryDuration = new Histogram({
    name: "timer_delivery_duration_seconds",
    help: "completedAt - firedAt of Completed tracked timers.",
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
    registers: [this.registry],
  });
  readonly brokerConnected = new Gauge({
    name: "timer_broker_connected",
    help: "1 while the service is connected to the broker with its streams and consumer in place, else 0.",
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    // Every series exists from the start, so rate() and alerts see zeros instead of nothing.
    for (const type of COMMAND_TYPES) for (const outcome of OUTCOMES) this.commands.inc({ type, outcome }, 0);
    for (const outcome of DELIVERY_OUTCOMES) this.deliveries.inc({ outcome }, 0);
  }

  deliveriesCounted(outcome: DeliveryOutcome, count: number): void {
    this.deliveries.inc({ outcome }, count);
  }

  deliveriesCompleted(durationSeconds: readonly number[]): void {
    for (const seconds of durationSeconds) this.deliveryDuration.observe(seconds);
  }

  commandHandled(type: CommandType, outcome: CommandOutcome): void {
    this.commands.inc({ type, outcome });
  }

  commandRejected(code: string): void {
    this.rejections.inc({ code });
  }

  timersFired(lagSeconds: readonly number[]): void {
    this.processed.inc(lagSeconds.length);
    for (const lag of lagSeconds) this.fireLag.observe(lag);
  }

  timersMissed(count: number): void {
    this.missed.inc(count);
  }

  publishFailed(count: number): void {
    this.publishFailures.inc(count);
  }

  pollCompleted(durationSeconds: number, endedAtMs: number): void {
    this.pollDuration.observe(durationSeconds);
    this.lastPoll.set(endedAtMs / 1000);
  }

  setPending(count: number): void {
    this.pending.set(count);
  }

  addPending(delta: number): void {
    this.pending.inc(delta);
  }
}
