/**
 * A component benchmark of the command path inside one process, no NATS: decode → processor →
 * SQLite store, with the service's own classes. It splits the CPU of one ScheduleTimer between
 * decoding and storing, which the end-to-end `ingest` scenario cannot.
 *
 *   npx tsx scripts/bench/ingest-pipeline-micro.ts [--commands 50000] [--batch 500] [--rounds 3] [--synchronous FULL] [--random] [--pending 1000000]
 *
 * Prints µs of CPU per command for decode alone and for the whole `process` call (decode + apply +
 * settle). One JSON line on stdout. `--random`: keys and due times at random, like the ingest
 * scenario. `--pending N`: each round's store first holds N Scheduled timers (the `pending1M` case of
 * the ingest scenario: B-tree pages no longer fit the page cache). `MICRO_SQL='…'` runs that SQL on each fresh store first, for what-ifs such as
 * `DROP INDEX timer_schedules_tenant_state_due_idx` or `DROP INDEX timer_due_tenants_earliest_idx`.
 */
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import { PrometheusTimerMetrics } from "../../src/adapters/metrics/prometheus-timer-metrics.js";
import { createLogger } from "../../src/adapters/logging/pino-logger.js";
import { systemClock } from "../../src/adapters/clock/system-clock.js";
import { TimerCommandProcessor, type DeliveredCommand } from "../../src/app/commands/timer-command-processor.js";
import type { TimerEventPublisher } from "../../src/app/timer-event-publisher.js";
import { callId, populateScheduled, randomScheduleDeliveries, round, scheduleMessage, serviceDecoding } from "./harness.js";

const args = process.argv.slice(2);
const arg = (name: string, fallback: string): string => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const COMMANDS = Number(arg("--commands", "50000"));
const BATCH = Number(arg("--batch", "500"));
const ROUNDS = Number(arg("--rounds", "3"));
const SYNCHRONOUS = arg("--synchronous", "FULL") as "FULL" | "NORMAL";
const PENDING = Number(arg("--pending", "0"));

const cpuUs = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

const noPublisher = new Proxy({}, { get: () => async () => {} }) as TimerEventPublisher;

// Like the ingest scenario: keys and due times at random over a large space (random B-tree pages).
const RANDOM = args.includes("--random");

function messages(round: number): DeliveredCommand[] {
  if (RANDOM) return randomScheduleDeliveries(COMMANDS, 0x5eed + round);
  const base = Date.now() + 7 * 86_400_000;
  return Array.from({ length: COMMANDS }, (_, i) => {
    const m = scheduleMessage("bench", callId(`r${round}`, i), base + i);
    return { subject: m.subject, body: m.data, brokerTimestampMs: Date.now(), sourceId: `${round}:${i}`, deliveryCount: 1 };
  });
}

const dir = mkdtempSync(join(tmpdir(), "ingest-micro-"));
const results: Record<string, unknown>[] = [];
try {
  const { decoder, tracing } = serviceDecoding();
  const pendingTemplate = PENDING > 0 ? join(dir, "pending.db") : undefined;
  if (pendingTemplate !== undefined) {
    await (await openSqliteTimerStore({ path: pendingTemplate })).close(); // migrates the file
    const base = Date.now() + 7 * 86_400_000;
    populateScheduled(pendingTemplate, { count: PENDING, tenantId: "bench", idPrefix: "t", dueAtMs: (i) => base + i, label: "pending" });
  }
  for (let r = 0; r < ROUNDS; r++) {
    const path = join(dir, `r${r}.db`);
    if (pendingTemplate !== undefined) copyFileSync(pendingTemplate, path);
    const store = await openSqliteTimerStore({ path, synchronous: SYNCHRONOUS });
    if (process.env.MICRO_SQL) store.database.exec(process.env.MICRO_SQL);
    const processor = new TimerCommandProcessor({
      decoder,
      store,
      publisher: noPublisher,
      clock: systemClock,
      metrics: new PrometheusTimerMetrics(),
      logger: createLogger("silent"),
      tracing,
      onScheduled: () => {},
    });
    const batch = messages(r);
    let t = cpuUs();
    for (const m of batch) decoder.decode(m);
    const decodeUs = (cpuUs() - t) / COMMANDS;
    const wall = performance.now();
    t = cpuUs();
    for (let i = 0; i < COMMANDS; i += BATCH) await processor.process(batch.slice(i, i + BATCH));
    const processUs = (cpuUs() - t) / COMMANDS;
    const wallUs = ((performance.now() - wall) * 1000) / COMMANDS;
    store.close();
    results.push({ round: r, decodeUs: round(decodeUs, 1), processUs: round(processUs, 1), processWallUs: round(wallUs, 1) });
    process.stderr.write(
      `round ${r}: decode ${decodeUs.toFixed(1)} µs, process ${processUs.toFixed(1)} µs CPU (${wallUs.toFixed(1)} wall) per command\n`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(JSON.stringify({ commands: COMMANDS, batch: BATCH, synchronous: SYNCHRONOUS, random: RANDOM, pending: PENDING, results }));
