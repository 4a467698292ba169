import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";
import { GenericContainer, Wait, getContainerRuntimeClient, type ImagePullPolicy, type StartedTestContainer } from "testcontainers";
import { freePort } from "./free-port.js";
import { waitForPostgres, type NatsServer, type PostgresServer, type StartNatsOptions } from "./test-infrastructure.js";

/**
 * The containers path of test/support/test-infrastructure.ts (loaded only when it is chosen).
 *
 * Images are referenced by name and never pulled: `TIMER_TEST_NATS_IMAGE` (default
 * localhost/timer-test-nats:debian12) and `TIMER_TEST_POSTGRES_IMAGE` (default
 * localhost/timer-test-postgres:debian12). A missing image is built once from
 * scripts/containers/*.Containerfile on top of `TIMER_TEST_BASE_IMAGE` (default
 * docker.io/library/debian:bookworm-slim), so NATS and Postgres are Debian 12's packages on every
 * engine, the same nats-server 2.9 as the local path. scripts/containers/prove-testcontainers.sh
 * builds them without any registry (debootstrap → podman import) and runs tests with podman.
 *
 * Every published port is bound to 127.0.0.1 on a port chosen here, so it survives stop/start.
 */

export const NATS_IMAGE = process.env.TIMER_TEST_NATS_IMAGE ?? "localhost/timer-test-nats:debian12";
export const POSTGRES_IMAGE = process.env.TIMER_TEST_POSTGRES_IMAGE ?? "localhost/timer-test-postgres:debian12";
const BASE_IMAGE = process.env.TIMER_TEST_BASE_IMAGE ?? "docker.io/library/debian:bookworm-slim";
/** Label on every container this module creates (scripts/containers removes leftovers by it). */
export const TEST_LABEL = "org.timer-service.test";

const CONTAINERFILES_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "../../scripts/containers");
const NEVER_PULL: ImagePullPolicy = { shouldPull: () => false };
const NATS_PORT = 4222;
const POSTGRES_PORT = 5432;
/**
 * `TIMER_TEST_CONTAINER_NETWORK=host`: containers share the host's network and listen on
 * 127.0.0.1:<port> themselves, with no published port (no NAT, no proxy, no port reservation in
 * between), like the local processes. Linux engines only. Default: published ports.
 */
const HOST_NETWORK = process.env.TIMER_TEST_CONTAINER_NETWORK === "host";

/** A GenericContainer whose published ports listen on 127.0.0.1 only (testcontainers binds all interfaces). */
class LoopbackContainer extends GenericContainer {
  protected override async beforeContainerCreated(): Promise<void> {
    const bindings = (this.hostConfig.PortBindings ?? {}) as Record<string, { HostIp?: string; HostPort?: string }[]>;
    for (const [port, hosts] of Object.entries(bindings)) bindings[port] = hosts.map((host) => ({ ...host, HostIp: "127.0.0.1" }));
    this.hostConfig.PortBindings = bindings;
  }
}

const ensured = new Map<string, Promise<void>>();

/** Resolves when `image` exists in the engine, building it from its Containerfile if it does not. */
function ensureImage(image: string, containerfile: string): Promise<void> {
  let pending = ensured.get(image);
  if (pending === undefined) {
    pending = (async () => {
      const client = await getContainerRuntimeClient();
      try {
        await client.container.dockerode.getImage(image).inspect();
        return;
      } catch (error) {
        if (!/no such image|not found|404/i.test(String(error))) throw error;
      }
      if (process.env.TIMER_TEST_BUILD_IMAGES === "0") {
        throw new Error(
          `image ${image} is missing and TIMER_TEST_BUILD_IMAGES=0; build it with scripts/containers/prove-testcontainers.sh --build-only`,
        );
      }
      await GenericContainer.fromDockerfile(CONTAINERFILES_DIR, containerfile)
        .withBuildArgs({ BASE: BASE_IMAGE })
        .withPullPolicy(NEVER_PULL)
        .build(image, { deleteOnExit: false });
    })();
    ensured.set(image, pending);
    pending.catch(() => ensured.delete(image));
  }
  return pending;
}

/** The container's user: the host user, so files in bind-mounted folders stay the test's own. */
function hostUser(): string | undefined {
  const uid = process.getuid?.();
  const gid = process.getgid?.();
  return uid === undefined || gid === undefined ? undefined : `${uid}:${gid}`;
}

/**
 * nats-server arguments for the container: `-c <host path>` (or `--config`) becomes a copy of the
 * file inside the container, and the `$NAME` variables the file reads are passed from this
 * process's environment (a local nats-server inherits them). Files the config `include`s are not
 * copied.
 */
function containerArgs(extraArgs: readonly string[]): {
  args: string[];
  files: { source: string; target: string; mode: number }[];
  env: Record<string, string>;
} {
  const args: string[] = [];
  const files: { source: string; target: string; mode: number }[] = [];
  const env: Record<string, string> = {};
  const copy = (source: string): string => {
    const target = `/etc/timer-test/${files.length}-${basename(source)}`;
    files.push({ source: resolve(source), target, mode: 0o644 });
    for (const [, name] of readFileSync(source, "utf8").matchAll(/\$\{?([A-Za-z_][A-Za-z0-9_]*)/g)) {
      const value = process.env[name!];
      if (value !== undefined) env[name!] = value;
    }
    return target;
  };
  for (let i = 0; i < extraArgs.length; i++) {
    const arg = extraArgs[i]!;
    const next = extraArgs[i + 1];
    if ((arg === "-c" || arg === "--config") && next !== undefined) {
      args.push(arg, copy(next));
      i++;
    } else if (arg.startsWith("--config=")) {
      args.push(`--config=${copy(arg.slice("--config=".length))}`);
    } else {
      args.push(arg);
    }
  }
  return { args, files, env };
}

abstract class ContainerServer {
  protected started: StartedTestContainer | undefined;
  protected running = false;

  constructor(readonly port: number) {}

  protected async dockerContainer() {
    const client = await getContainerRuntimeClient();
    if (this.started === undefined) throw new Error("no container");
    return { client, container: client.container.getById(this.started.getId()) };
  }

  async stop(hard = false): Promise<void> {
    if (!this.running) return;
    this.running = false;
    const { client, container } = await this.dockerContainer();
    if (hard) {
      await container.kill({ signal: "SIGKILL" }).catch((error: unknown) => {
        if (!/not running|is not running|409|304/i.test(String(error))) throw error;
      });
      await container.wait();
    } else {
      await client.container.stop(container, { timeout: 10 });
    }
  }

  /** Removes the container (and its anonymous volumes). */
  protected async removeContainer(): Promise<void> {
    if (this.started === undefined) return;
    const { container } = await this.dockerContainer();
    this.started = undefined;
    this.running = false;
    await container.remove({ force: true, v: true }).catch((error: unknown) => {
      if (!/no such container|404/i.test(String(error))) throw error;
    });
  }

  /** Starts the existing (stopped) container again: same port, same writable layer and volumes. */
  protected async startAgain(): Promise<void> {
    const { client, container } = await this.dockerContainer();
    await client.container.start(container);
  }
}

class ContainerNatsServer extends ContainerServer implements NatsServer {
  jetstream = true;
  private startedWithJetstream: boolean | undefined;

  constructor(
    port: number,
    readonly storeDir: string,
    private readonly extraArgs: readonly string[],
  ) {
    super(port);
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async restart(): Promise<void> {
    if (this.running) throw new Error("nats-server is already running");
    if (this.started !== undefined && this.startedWithJetstream === this.jetstream) {
      await this.startAgain();
    } else {
      // A container's command is fixed: another -js setting needs a new container (same port, same store).
      await this.removeContainer();
      this.started = await this.create();
      this.startedWithJetstream = this.jetstream;
    }
    this.running = true;
    await waitForNatsInfo(this.port, 30_000);
  }

  async dispose(): Promise<void> {
    await this.stop(true);
    await this.removeContainer();
    rmSync(this.storeDir, { recursive: true, force: true });
  }

  private async create(): Promise<StartedTestContainer> {
    await ensureImage(NATS_IMAGE, "nats.Containerfile");
    const { args, files, env } = containerArgs(this.extraArgs);
    const [address, port] = HOST_NETWORK ? ["127.0.0.1", this.port] : ["0.0.0.0", NATS_PORT];
    let container = new LoopbackContainer(NATS_IMAGE)
      .withPullPolicy(NEVER_PULL)
      .withLabels({ [TEST_LABEL]: "nats" })
      .withEntrypoint(["/usr/sbin/nats-server"])
      .withCommand([...(this.jetstream ? ["-js"] : []), "-a", address, "-p", String(port), "-sd", "/data", ...args])
      .withBindMounts([{ source: this.storeDir, target: "/data", mode: "rw" }])
      .withEnvironment(env)
      .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
      .withStartupTimeout(30_000);
    container = HOST_NETWORK ? container.withNetworkMode("host") : container.withExposedPorts({ container: NATS_PORT, host: this.port });
    if (files.length > 0) container = container.withCopyFilesToContainer(files);
    const user = hostUser();
    if (user !== undefined) container = container.withUser(user);
    return container.start();
  }
}

class ContainerPostgresServer extends ContainerServer implements PostgresServer {
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/test`;
  }

  async restart(): Promise<void> {
    if (this.running) throw new Error("postgres is already running");
    if (this.started !== undefined) await this.startAgain();
    else this.started = await this.create();
    this.running = true;
    await waitForPostgres(this.url, 30_000);
  }

  async dispose(): Promise<void> {
    await this.stop(true);
    await this.removeContainer();
  }

  private async create(): Promise<StartedTestContainer> {
    await ensureImage(POSTGRES_IMAGE, "postgres.Containerfile");
    const container = new LoopbackContainer(POSTGRES_IMAGE)
      .withPullPolicy(NEVER_PULL)
      .withLabels({ [TEST_LABEL]: "postgres" })
      .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/))
      .withStartupTimeout(60_000);
    if (!HOST_NETWORK) return container.withExposedPorts({ container: POSTGRES_PORT, host: this.port }).start();
    return container
      .withNetworkMode("host")
      .withCommand(["-D", "/var/lib/postgresql/data", "-c", "listen_addresses=127.0.0.1", "-p", String(this.port)])
      .start();
  }
}

export async function startNatsContainer(options: StartNatsOptions = {}): Promise<NatsServer> {
  const server = new ContainerNatsServer(await freePort(), mkdtempSync(join(tmpdir(), "timer-nats-")), options.extraArgs ?? []);
  server.jetstream = options.jetstream ?? true;
  try {
    await server.restart();
  } catch (error) {
    await server.dispose().catch(() => undefined);
    throw error;
  }
  return server;
}

export async function startPostgresContainer(): Promise<PostgresServer> {
  const server = new ContainerPostgresServer(await freePort());
  try {
    await server.restart();
  } catch (error) {
    await server.dispose().catch(() => undefined);
    throw error;
  }
  return server;
}

/**
 * Resolves once nats-server greets on 127.0.0.1:`port` with its INFO line. (A port that accepts is
 * not enough: Docker's userland proxy accepts before the server in the container listens.)
 */
async function waitForNatsInfo(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const greeted = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.setTimeout(1_000, () => done(false));
      socket.once("data", (chunk: Buffer) => done(chunk.toString("latin1").startsWith("INFO ")));
      socket.once("error", () => done(false));
      socket.once("close", () => done(false));
    });
    if (greeted) return;
    if (Date.now() > deadline) throw new Error(`nats-server in its container did not answer on 127.0.0.1:${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
