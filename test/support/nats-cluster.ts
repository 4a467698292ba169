import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { freePort } from "./free-port.js";
import { waitForPort } from "./test-infrastructure.js";

/**
 * A JetStream cluster of real `nats-server` processes on loopback (CONTRACT §6: R3 streams survive
 * the loss of one node). Each node has its own client port, route port, server name and store
 * folder; every node routes to the others. Nodes are local processes even when the test
 * infrastructure provider runs containers: routes between them need fixed loopback ports.
 * Set NATS_SERVER_BIN to use another binary than the one on PATH.
 */
export class NatsClusterNode {
  private child: ChildProcess | undefined;
  private stderr = "";

  constructor(
    readonly name: string,
    readonly port: number,
    readonly clusterPort: number,
    readonly storeDir: string,
    private readonly clusterName: string,
    private readonly routes: readonly number[],
  ) {}

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  /** The end of what the process wrote to stderr (its log), for a failure's message. */
  get log(): string {
    return this.stderr;
  }

  /** Starts the process; resolves once it listens for clients (JetStream may still be electing). */
  async start(): Promise<void> {
    if (this.child !== undefined) throw new Error(`${this.name} is already running`);
    const args = [
      "-js",
      "-a",
      "127.0.0.1",
      "-p",
      String(this.port),
      "-n",
      this.name,
      "--cluster_name",
      this.clusterName,
      "-cluster",
      `nats://127.0.0.1:${this.clusterPort}`,
      "-routes",
      this.routes.map((port) => `nats://127.0.0.1:${port}`).join(","),
      "-sd",
      this.storeDir,
    ];
    const child = spawn(process.env.NATS_SERVER_BIN ?? "nats-server", args, { stdio: ["ignore", "ignore", "pipe"] });
    this.child = child;
    this.stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-20_000);
    });
    const exited = new Promise<never>((_, reject) =>
      child.once("exit", (code) => reject(new Error(`${this.name} exited with ${code}: ${this.stderr}`))),
    );
    exited.catch(() => undefined);
    await Promise.race([waitForPort(this.port, 10_000, this.name), exited]);
  }

  /** Stops the process (SIGKILL when `hard`), keeping its store folder for a restart. */
  async stop(hard = false): Promise<void> {
    const child = this.child;
    if (child === undefined) return;
    this.child = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill(hard ? "SIGKILL" : "SIGTERM");
    });
  }
}

export class NatsCluster {
  private constructor(readonly nodes: readonly NatsClusterNode[]) {}

  /** All client URLs, comma-separated, as TIMER_BROKER_URL takes them. */
  get urls(): string {
    return this.nodes.map((node) => node.url).join(",");
  }

  /**
   * Starts `size` nodes (default 3) and waits until JetStream answers through each of them and a
   * stream of `size` replicas can be placed. A cluster that cannot place one within
   * `placementTimeoutMs` is discarded and another started on new ports and folders, up to
   * `attempts` times: now and then the meta group of a fresh cluster leaves a node out of its peer
   * set for good, and every placement is refused ("no suitable peers for placement", no reason).
   */
  static async start(size = 3, { attempts = 3, placementTimeoutMs = 30_000 } = {}): Promise<NatsCluster> {
    const failures: string[] = [];
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const cluster = new NatsCluster(await clusterNodes(size, attempt));
      try {
        await Promise.all(cluster.nodes.map((node) => node.start()));
        await cluster.waitUntilJetStream();
        await cluster.waitUntilPlacement(placementTimeoutMs);
        return cluster;
      } catch (error) {
        const logs = cluster.nodes.map(
          (node) => `--- ${node.name} (client ${node.port}, route ${node.clusterPort})\n${node.log.slice(-3_000)}`,
        );
        failures.push(`attempt ${attempt}: ${describeError(error)}\n${logs.join("\n")}`);
        await cluster.dispose();
      }
    }
    throw new Error(`no cluster of ${size} nodes formed in ${attempts} attempts\n${failures.join("\n")}`);
  }

  /** Restarts a stopped node and waits until JetStream answers through it again. */
  async restart(node: NatsClusterNode): Promise<void> {
    await node.start();
    await this.waitUntilJetStream([node]);
  }

  /**
   * Waits until JetStream answers account info through each of `nodes` (a meta leader is elected
   * and the node has joined), within `timeoutMs`.
   */
  async waitUntilJetStream(nodes: readonly NatsClusterNode[] = this.nodes, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (const node of nodes) {
      let last: unknown;
      for (;;) {
        const connection = await connect({ servers: node.url, reconnect: false, timeout: 1_000 }).catch(
          (error: unknown) => ((last = error), undefined),
        );
        if (connection !== undefined) {
          try {
            const jsm = await jetstreamManager(connection, { timeout: 1_000 });
            await jsm.getAccountInfo();
            break;
          } catch (error) {
            last = error;
          } finally {
            await connection.close().catch(() => undefined);
          }
        }
        if (Date.now() > deadline) throw new Error(`JetStream not available through ${node.name} within ${timeoutMs} ms: ${String(last)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  /**
   * Waits until a stream with a replica on every node can be placed: the meta leader answers account
   * info before it has heard from every peer, and until then it refuses such a stream ("no suitable
   * peers for placement"). A probe stream is added and deleted.
   */
  async waitUntilPlacement(timeoutMs: number): Promise<void> {
    const connection = await connect({ servers: this.nodes.map((node) => node.url), timeout: 2_000 });
    try {
      const jsm = await jetstreamManager(connection, { timeout: 2_000 });
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        try {
          await jsm.streams.add({ name: "PLACEMENT_PROBE", subjects: ["placement.probe"], num_replicas: this.nodes.length });
          await jsm.streams.delete("PLACEMENT_PROBE");
          return;
        } catch (error) {
          if (Date.now() > deadline) {
            throw new Error(`a stream of ${this.nodes.length} replicas not placed within ${timeoutMs} ms`, { cause: error });
          }
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    } finally {
      await connection.close().catch(() => undefined);
    }
  }

  /**
   * Waits until each of `streams` has a leader and every one of its replicas is current (caught up
   * with the leader, not offline), within `timeoutMs`. After a restart this is the moment the
   * cluster tolerates the loss of another node again: stopping one earlier can leave a replicated
   * stream with only the leader and a replica still catching up, i.e. without a quorum.
   * A replica's catch-up sometimes stalls in nats-server until the stream's leader changes (the same
   * lag for good): when nothing has moved for `stallMs`, the leader is asked to step down.
   */
  async waitUntilReplicasCurrent(streams: readonly string[], timeoutMs = 30_000, stallMs = 8_000): Promise<void> {
    const running = this.nodes.filter((node) => node.running);
    const connection = await connect({ servers: running.map((node) => node.url), timeout: 1_000 });
    try {
      const jsm = await jetstreamManager(connection, { timeout: 2_000 });
      const deadline = Date.now() + timeoutMs;
      for (const stream of streams) {
        let last = "no answer";
        let movedAtMs = Date.now();
        for (;;) {
          const info = await jsm.streams.info(stream).catch((error: unknown) => ((last = String(error)), undefined));
          if (info !== undefined) {
            const replicas = info.cluster?.replicas ?? [];
            const behind = replicas.filter((replica) => !replica.current || replica.offline === true);
            const complete = replicas.length + 1 === info.config.num_replicas;
            if (info.cluster?.leader !== undefined && complete && behind.length === 0) break;
            const state =
              `leader ${info.cluster?.leader ?? "none"}, replicas ` +
              replicas
                .map((r) => `${r.name} ${r.current ? "current" : "behind"}${r.offline ? " offline" : ""} lag ${r.lag ?? 0}`)
                .join(", ");
            if (state !== last) movedAtMs = Date.now();
            last = state;
            if (info.cluster?.leader !== undefined && behind.length > 0 && Date.now() - movedAtMs >= stallMs) {
              console.info(`${stream}: no catch-up for ${stallMs} ms (${last}); the leader is asked to step down`);
              await connection.request(`$JS.API.STREAM.LEADER.STEPDOWN.${stream}`, "", { timeout: 2_000 }).catch(() => undefined);
              movedAtMs = Date.now();
            }
          }
          if (Date.now() > deadline) throw new Error(`${stream}: replicas not all current within ${timeoutMs} ms (${last})`);
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    } finally {
      await connection.close().catch(() => undefined);
    }
  }

  /** Stops every node and removes their store folders. */
  async dispose(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop(true)));
    for (const node of this.nodes) rmSync(node.storeDir, { recursive: true, force: true });
  }
}

async function clusterNodes(size: number, attempt: number): Promise<NatsClusterNode[]> {
  const clusterName = `timer-test-${process.pid}-${attempt}`;
  const ports = await distinctFreePorts(size * 2);
  const clusterPorts = ports.slice(size);
  return Array.from({ length: size }, (_, i) => {
    const storeDir = mkdtempSync(join(tmpdir(), `timer-nats-c${i}-`));
    const routes = clusterPorts.filter((_, j) => j !== i);
    return new NatsClusterNode(`n${i}`, ports[i]!, clusterPorts[i]!, storeDir, clusterName, routes);
  });
}

function describeError(error: unknown): string {
  const cause = error instanceof Error && error.cause !== undefined ? ` (${String(error.cause)})` : "";
  return `${String(error)}${cause}`;
}

async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}
