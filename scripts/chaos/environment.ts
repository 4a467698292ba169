import { resolve } from "node:path";
import { DelayProxy } from "../../test/support/delay-proxy.js";
import { FakeWallClock } from "../../test/support/fake-wall-clock.js";
import { FreezeProxy } from "../../test/support/freeze-proxy.js";
import { NatsCluster } from "../../test/support/nats-cluster.js";
import { TEST_DATABASE_URL, dropSchema, uniqueSchema } from "../../test/support/test-postgres.js";
import { TimerServiceProcess } from "../../test/support/timer-service-process.js";
import { PostgresReplicaSet, replicaSetUnavailable } from "../../test/support/postgres-replica-set.js";
import { VirtualIpProxy } from "../../test/support/virtual-ip-proxy.js";
import { INSTANCES } from "./fault-schedule.js";

const NO_ADVERTISE_WRAPPER = resolve(import.meta.dirname, "nats-server-no-advertise.sh");

/** Service settings of the run: short enough that faults show within a few seconds. */
const SERVICE_ENV = {
  TIMER_STORE: "postgres",
  TIMER_STREAM_REPLICAS: "3",
  TIMER_CLAIM_TTL_MS: "5000",
  TIMER_DATABASE_TIMEOUT_MS: "3000",
  TIMER_POLLING_INTERVAL: "500",
  TIMER_LOG_LEVEL: "warn",
};

/**
 * One service instance with everything the nemesis acts on: its own path to Postgres (a freeze
 * relay in front of a delay relay), its own freeze relay to each NATS node, and its own wall clock.
 */
export interface ChaosInstance {
  readonly index: number;
  readonly service: TimerServiceProcess;
  readonly postgresFreeze: FreezeProxy;
  readonly postgresDelay: DelayProxy;
  readonly natsFreezes: readonly FreezeProxy[];
  /** Undefined when libfaketime is not installed (clock steps are then left out of the schedule). */
  readonly clock: FakeWallClock | undefined;
}

/**
 * The Postgres of the run: a primary with a synchronous standby of the run's own behind one address
 * (so `failover-postgres` can kill the primary and promote the standby), or, where initdb is
 * missing, the machine's Postgres (TEST_DATABASE_URL) and `unavailable` says why failovers are skipped.
 */
export interface ChaosDatabase {
  /** The address the instances and the read-back use. */
  readonly url: string;
  readonly replicaSet: PostgresReplicaSet | undefined;
  readonly virtualIp: VirtualIpProxy | undefined;
  readonly unavailable: string | undefined;
}

async function startDatabase(): Promise<ChaosDatabase> {
  const unavailable = replicaSetUnavailable();
  if (unavailable !== undefined) return { url: TEST_DATABASE_URL, replicaSet: undefined, virtualIp: undefined, unavailable };
  const replicaSet = await PostgresReplicaSet.start({ synchronous: true });
  const virtualIp = await VirtualIpProxy.start(replicaSet.primary.port).catch(async (error: unknown) => {
    await replicaSet.dispose();
    throw error;
  });
  return { url: `postgres://postgres@127.0.0.1:${virtualIp.port}/postgres`, replicaSet, virtualIp, unavailable };
}

export interface ChaosEnvironment {
  readonly database: ChaosDatabase;
  readonly cluster: NatsCluster;
  readonly schema: string;
  readonly instances: readonly ChaosInstance[];
  dispose(): Promise<void>;
}

/** A 3-node NATS cluster and 3 service instances on one Postgres schema, all ready. */
export async function startEnvironment(): Promise<ChaosEnvironment> {
  const natsServerBin = process.env.NATS_SERVER_BIN;
  process.env.CHAOS_NATS_SERVER_BIN = natsServerBin ?? "nats-server";
  // Node restarts read it again, so it stays set until dispose.
  process.env.NATS_SERVER_BIN = NO_ADVERTISE_WRAPPER;
  const cluster = await NatsCluster.start(3);
  const database = await startDatabase().catch(async (error: unknown) => {
    await cluster.dispose();
    throw error;
  });
  const schema = uniqueSchema("chaos");
  const instances: ChaosInstance[] = [];
  const dispose = async (): Promise<void> => {
    for (const instance of instances) await instance.service.kill("SIGKILL").catch(() => undefined);
    for (const instance of instances) {
      await instance.service.dispose();
      await instance.postgresFreeze.close();
      await instance.postgresDelay.close();
      for (const proxy of instance.natsFreezes) await proxy.close();
      instance.clock?.dispose();
    }
    await dropSchema(schema).catch(() => undefined);
    await database.virtualIp?.close();
    await database.replicaSet?.dispose();
    await cluster.dispose();
    if (natsServerBin === undefined) delete process.env.NATS_SERVER_BIN;
    else process.env.NATS_SERVER_BIN = natsServerBin;
  };
  try {
    const databaseUrl = new URL(database.url);
    // The relays connect to loopback: the nemesis cuts links on this machine.
    if (!["127.0.0.1", "localhost"].includes(databaseUrl.hostname))
      throw new Error(`chaos needs Postgres on this machine, not ${databaseUrl.hostname}`);
    for (let index = 0; index < INSTANCES; index++) {
      const postgresDelay = await DelayProxy.start(Number(databaseUrl.port || 5432));
      const postgresFreeze = await FreezeProxy.start(postgresDelay.port);
      const natsFreezes = await Promise.all(cluster.nodes.map((node) => FreezeProxy.start(node.port)));
      const clock = FakeWallClock.unavailableReason() === undefined ? new FakeWallClock() : undefined;
      const viaProxy = new URL(database.url);
      viaProxy.hostname = "127.0.0.1";
      viaProxy.port = String(postgresFreeze.port);
      const service = await TimerServiceProcess.start(
        natsFreezes.map((proxy) => `nats://127.0.0.1:${proxy.port}`).join(","),
        { ...SERVICE_ENV, TIMER_DATABASE_URL: viaProxy.toString(), TIMER_DATABASE_SCHEMA: schema, ...(clock?.env() ?? {}) },
        { waitReady: false },
      );
      instances.push({ index, service, postgresFreeze, postgresDelay, natsFreezes, clock });
    }
    await Promise.all(instances.map((instance) => instance.service.waitUntilReady(90_000)));
  } catch (error) {
    const logs = instances.map(
      (i) => `instance ${i.index}:\n${i.service.logLines.slice(-15).join("\n")}\n${i.service.stderr.slice(-2_000)}`,
    );
    await dispose();
    throw new Error(`${String(error)}\n${logs.join("\n")}`, { cause: error });
  }
  return { database, cluster, schema, instances, dispose };
}
