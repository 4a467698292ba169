import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";
import { systemClock } from "../../../src/adapters/clock/system-clock.js";
import { HeaderTracing } from "../../../src/adapters/tracing/header-tracing.js";
import { CommandDecoder } from "../../../src/app/commands/command-decoder.js";
import type { DeliveredCommand } from "../../../src/app/commands/timer-command-processor.js";
import { scheduleMessage } from "./bench-client.js";
import { prng } from "./statistics.js";

/**
 * The decoder and tracing of the in-process micro-benchmarks, composed as the service composes
 * them by default: trace ids for commands without `traceparent` come from the pooled generator.
 */
export function serviceDecoding(): { decoder: CommandDecoder; tracing: HeaderTracing } {
  const tracing = new HeaderTracing();
  const decoder = new CommandDecoder({
    subjectPrefix: "timer",
    maxHorizonDays: 3650,
    maxClockSkewMs: 86_400_000,
    clock: systemClock,
    calendar: new CronerCalendar(),
    tracing,
  });
  return { decoder, tracing };
}

/**
 * `count` ScheduleTimer deliveries of tenant "bench" with keys and due times (a week to a week and
 * a day ahead) at random from `seed`, as UUID-keyed traffic lands at random places in every index.
 */
export function randomScheduleDeliveries(count: number, seed: number): DeliveredCommand[] {
  const random = prng(seed);
  const base = Date.now() + 7 * 86_400_000;
  return Array.from({ length: count }, (_, i) => {
    const serviceCallId = `t-${String(Math.floor(random() * 1_000_000)).padStart(8, "0")}-${i}`;
    const m = scheduleMessage("bench", serviceCallId, base + Math.floor(random() * 86_400_000));
    return { subject: m.subject, body: m.data, brokerTimestampMs: Date.now(), sourceId: `${seed}:${i}`, deliveryCount: 1 };
  });
}
