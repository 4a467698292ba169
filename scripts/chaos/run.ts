import { connect } from "@nats-io/transport-node";
import { checkHistory, type ChaosSummary } from "./checker.js";
import { startEnvironment } from "./environment.js";
import { EventRecorder } from "./event-recorder.js";
import { FAULT_KINDS, planFaults, type FaultKind } from "./fault-schedule.js";
import type { ChaosHistory } from "./history.js";
import { runNemesis } from "./nemesis.js";
import { Prng } from "./prng.js";
import { ChaosProducer } from "./producer.js";
import { ReadBackPoller } from "./read-back.js";
import { FakeWallClock } from "../../test/support/fake-wall-clock.js";

export const TENANT = "chaos";
/** After the last fault is healed: how long every instance has to be ready again, and the timers to drain. */
const READY_AFTER_HEAL_MS = 60_000;
const DRAIN_AFTER_LAST_DUE_MS = 60_000;
const DRAIN_CHECK_EVERY_MS = 2_000;

export interface ChaosOptions {
  readonly seed: number;
  readonly durationMs: number;
  /** New one-shot timers per second. */
  readonly rate: number;
  readonly log: (line: string) => void;
}

export interface ChaosResult {
  readonly history: ChaosHistory;
  readonly summary: ChaosSummary;
  /** Instances that were not ready again after the faults were healed, with their last log lines. */
  readonly notReady: readonly string[];
}

/**
 * One nemesis run: the environment, the workload and the fault schedule for `durationMs`, then every
 * fault healed, the timers drained, and the whole history judged.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const { seed, durationMs, log } = options;
  const kinds: FaultKind[] = FAULT_KINDS.filter((kind) => kind !== "step-clock" || FakeWallClock.unavailableReason() === undefined);
  const faults = planFaults(seed, durationMs, kinds);
  log(`chaos: seed ${seed}, ${durationMs} ms, ${faults.length} faults planned`);
  const environment = await startEnvironment();
  const urls = environment.cluster.nodes.map((node) => node.url);
  const connection = await connect({ servers: urls, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  const recorder = await EventRecorder.start(urls);
  const readBacks = await ReadBackPoller.start(environment.database.url, environment.schema, TENANT);
  try {
    const producer = new ChaosProducer(connection, TENANT, new Prng(seed).fork("workload"), readBacks);
    await producer.startRecurring();
    const startedAtMs = Date.now();
    const [injected] = await Promise.all([
      runNemesis(environment, faults, startedAtMs, log),
      producer.run(options.rate, startedAtMs + durationMs),
    ]);
    const healedAtMs = Date.now();
    log(`chaos: faults healed; draining`);
    const notReady: string[] = [];
    for (const instance of environment.instances) {
      await instance.service.waitUntilReady(READY_AFTER_HEAL_MS).catch((error: unknown) => {
        notReady.push(`instance ${instance.index}: ${String(error)}`);
      });
    }
    const snapshot = (endedAtMs: number): ChaosHistory => ({
      seed,
      tenantId: TENANT,
      startedAtMs,
      healedAtMs,
      endedAtMs,
      timers: producer.timers.map((t) => ({ ...t, commands: [...t.commands] })),
      events: [...recorder.events],
      faults: injected,
      streamLostTail: recorder.lostTail,
    });
    const drainUntilMs = Math.max(healedAtMs, producer.lastDueMs) + DRAIN_AFTER_LAST_DUE_MS;
    for (;;) {
      const summary = checkHistory(snapshot(Date.now()));
      const drained =
        summary.lost === 0 && summary.recurring.lostOccurrences === 0 && readBacks.pending === 0 && Date.now() > producer.lastDueMs;
      if (drained || Date.now() > drainUntilMs) break;
      await new Promise((r) => setTimeout(r, DRAIN_CHECK_EVERY_MS));
    }
    // Late republishes (an expired claim fired again) land within a claim TTL and a poll.
    await new Promise((r) => setTimeout(r, 6_000));
    await recorder.close();
    const history = snapshot(Date.now());
    return { history, summary: checkHistory(history), notReady };
  } finally {
    await recorder.close().catch(() => undefined);
    await readBacks.close();
    await connection.close().catch(() => undefined);
    await environment.dispose();
  }
}
