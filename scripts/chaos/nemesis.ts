import type { ChaosEnvironment } from "./environment.js";
import type { PlannedFault } from "./fault-schedule.js";
import type { InjectedFault } from "./history.js";

const STREAMS = ["TIMER_COMMANDS", "TIMER_EVENTS"];
/** A NATS node is stopped only once every stream replica is current: R3 tolerates one node down, not one down and one behind. */
const REPLICAS_CURRENT_WITHIN_MS = 20_000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/**
 * Applies the planned faults one at a time, each at its planned offset from `startedAtMs` (or as
 * soon as the previous one is healed, when that took longer), and heals each after its duration.
 */
export async function runNemesis(
  environment: ChaosEnvironment,
  faults: readonly PlannedFault[],
  startedAtMs: number,
  log: (line: string) => void,
): Promise<InjectedFault[]> {
  const injected: InjectedFault[] = [];
  for (const fault of faults) {
    await sleep(startedAtMs + fault.atMs - Date.now());
    const plannedStartMs = Date.now();
    const record = await inject(environment, fault).catch((error: unknown): InjectedFault => ({
      ...fault,
      startedAtMs: plannedStartMs,
      healedAtMs: Date.now(),
      healError: String(error),
    }));
    injected.push(record);
    log(
      `${new Date(record.startedAtMs).toISOString()} ${fault.kind} target ${fault.target}` +
        `${fault.amount === 0 ? "" : ` amount ${fault.amount}`} for ${record.healedAtMs - record.startedAtMs} ms` +
        `${record.skipped === undefined ? "" : ` (skipped: ${record.skipped})`}` +
        `${record.healError === undefined ? "" : ` (heal failed: ${record.healError})`}`,
    );
  }
  return injected;
}

async function inject(environment: ChaosEnvironment, fault: PlannedFault): Promise<InjectedFault> {
  const { kind, target, amount, durationMs } = fault;
  const done = (startedAtMs: number, skipped?: string): InjectedFault => ({
    kind,
    target,
    amount,
    startedAtMs,
    healedAtMs: Date.now(),
    ...(skipped === undefined ? {} : { skipped }),
  });
  const instance = environment.instances[target];
  switch (kind) {
    case "kill-instance": {
      const startedAtMs = Date.now();
      await instance!.service.kill("SIGKILL");
      await sleep(durationMs);
      await instance!.service.restart({ waitReady: false });
      return done(startedAtMs);
    }
    case "stop-nats-node": {
      const node = environment.cluster.nodes[target]!;
      const current = await environment.cluster
        .waitUntilReplicasCurrent(STREAMS, REPLICAS_CURRENT_WITHIN_MS)
        .then(() => undefined)
        .catch((error: unknown) => String(error));
      if (current !== undefined) return done(Date.now(), current);
      const startedAtMs = Date.now();
      await node.stop();
      await sleep(durationMs);
      await environment.cluster.restart(node);
      return done(startedAtMs);
    }
    case "partition-instance-postgres":
      return hold(
        durationMs,
        done,
        () => instance!.postgresFreeze.freeze(),
        () => instance!.postgresFreeze.thaw(),
      );
    case "partition-instance-nats":
      return hold(
        durationMs,
        done,
        () => instance!.natsFreezes.forEach((proxy) => proxy.freeze()),
        () => instance!.natsFreezes.forEach((proxy) => proxy.thaw()),
      );
    case "freeze-postgres":
      return hold(
        durationMs,
        done,
        () => environment.instances.forEach((i) => i.postgresFreeze.freeze()),
        () => environment.instances.forEach((i) => i.postgresFreeze.thaw()),
      );
    case "step-clock":
      if (instance!.clock === undefined) return done(Date.now(), "libfaketime is not installed");
      return hold(
        durationMs,
        done,
        () => instance!.clock!.set(amount),
        () => instance!.clock!.set(0),
      );
    case "slow-storage":
      return hold(
        durationMs,
        done,
        () => (instance!.postgresDelay.delayMs = amount),
        () => (instance!.postgresDelay.delayMs = 0),
      );
    case "failover-postgres": {
      const { replicaSet, virtualIp, unavailable } = environment.database;
      if (replicaSet === undefined || virtualIp === undefined) return done(Date.now(), unavailable ?? "no replica set");
      const startedAtMs = Date.now();
      replicaSet.killNode(replicaSet.primary);
      await sleep(durationMs);
      virtualIp.pointAt((await replicaSet.promoteAndReplace()).port);
      // A set without a standby could not fail over again: the next failover needs one.
      await replicaSet.startReplacementStandby();
      return done(startedAtMs);
    }
  }
}

async function hold(
  durationMs: number,
  done: (startedAtMs: number) => InjectedFault,
  apply: () => void,
  heal: () => void,
): Promise<InjectedFault> {
  const startedAtMs = Date.now();
  apply();
  await sleep(durationMs);
  heal();
  return done(startedAtMs);
}
