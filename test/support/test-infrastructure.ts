import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "node:net";
import pg from "pg";
import { freePort } from "./free-port.js";
import { LOCAL_DATABASE_URL } from "./test-postgres.js";

/**
 * Where tests get their infrastructure (NATS, Postgres) from. One provider, two paths:
 *
 * - local processes (the default): `nats-server` / `initdb` + `postgres` from PATH, each on a free
 *   port of 127.0.0.1 with its own temp folder;
 * - containers via testcontainers when `TEST_CONTAINERS=1`, or when `DOCKER_HOST` is set and
 *   `TEST_CONTAINERS` is not `0`. Images: `TIMER_TEST_NATS_IMAGE` / `TIMER_TEST_POSTGRES_IMAGE`
 *   (see test/support/container-infrastructure.ts and docs/adr/0007-test-infrastructure-provider.md).
 *
 * Both paths hand out the same surface, so a test does not know which one it runs on.
 */

/** A NATS server for one test file; `restart()` / `stop()` keep its port and its JetStream store. */
export interface NatsServer {
  /** The host port on 127.0.0.1; the same across stop/restart. */
  readonly port: number;
  /** A host folder holding the JetStream store (bind-mounted into a container); tests may empty it. */
  readonly storeDir: string;
  readonly url: string;
  /** Whether the next (re)start enables JetStream; a test may turn it on for a restart. */
  jetstream: boolean;
  /** (Re)starts the server on the same port and store. */
  restart(): Promise<void>;
  /** Stops the server (SIGKILL when `hard`), keeping its store for a restart. */
  stop(hard?: boolean): Promise<void>;
  /** Stops the server and removes its store (and its container). */
  dispose(): Promise<void>;
}

export interface StartNatsOptions {
  /** Extra nats-server arguments, e.g. ["-c", "/abs/path.conf"] or ["--user", "u", "--pass", "p"]. */
  extraArgs?: readonly string[];
  /** Start with JetStream (`-js`); default true. */
  jetstream?: boolean;
}

/** A Postgres server of its own: database `test`, user `postgres`, trust auth, on 127.0.0.1. */
export interface PostgresServer {
  readonly port: number;
  /** postgres://postgres@127.0.0.1:<port>/test */
  readonly url: string;
  restart(): Promise<void>;
  stop(hard?: boolean): Promise<void>;
  dispose(): Promise<void>;
}

export type InfrastructurePath = "local" | "containers";

/** `TEST_CONTAINERS=1` → containers; `TEST_CONTAINERS=0` → local; else containers iff DOCKER_HOST is set. */
export function infrastructurePath(env: NodeJS.ProcessEnv = process.env): InfrastructurePath {
  const flag = env.TEST_CONTAINERS?.trim().toLowerCase();
  if (flag === "1" || flag === "true") return "containers";
  if (flag === "0" || flag === "false") return "local";
  return env.DOCKER_HOST !== undefined && env.DOCKER_HOST !== "" ? "containers" : "local";
}

/** A NATS server on the chosen path. */
export async function startNats(options: StartNatsOptions = {}): Promise<NatsServer> {
  if (infrastructurePath() === "containers") {
    const containers = await import("./container-infrastructure.js");
    return containers.startNatsContainer(options);
  }
  return LocalNatsServer.start(options);
}

/** A private Postgres server on the chosen path (for tests that stop or restart it). */
export async function startPostgres(): Promise<PostgresServer> {
  if (infrastructurePath() === "containers") {
    const containers = await import("./container-infrastructure.js");
    return containers.startPostgresContainer();
  }
  return LocalPostgresServer.start();
}

let sharedPostgres: Promise<PostgresServer> | undefined;

/**
 * The URL of a Postgres that tests share (each test makes its own schema). `TIMER_TEST_DATABASE_URL`
 * wins (the containers' global setup sets it for the whole run); else, locally, the machine's
 * Postgres on 127.0.0.1:5432; else, on the containers path, one container for this worker process.
 */
export async function postgresUrl(): Promise<string> {
  const fromEnv = process.env.TIMER_TEST_DATABASE_URL;
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv;
  if (infrastructurePath() === "local") return LOCAL_DATABASE_URL;
  sharedPostgres ??= startPostgres();
  return (await sharedPostgres).url;
}

// ---------------------------------------------------------------------------------------------
// Local processes

/**
 * A real `nats-server -js` with its own free port and its own store folder. Set NATS_SERVER_BIN to
 * use another binary than the one on PATH.
 */
export class LocalNatsServer implements NatsServer {
  private child: ChildProcess | undefined;
  jetstream = true;

  private constructor(
    readonly port: number,
    readonly storeDir: string,
    private readonly extraArgs: readonly string[],
  ) {}

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  static async start(options: StartNatsOptions = {}): Promise<LocalNatsServer> {
    const server = new LocalNatsServer(await freePort(), mkdtempSync(join(tmpdir(), "timer-nats-")), options.extraArgs ?? []);
    server.jetstream = options.jetstream ?? true;
    await server.restart();
    return server;
  }

  async restart(): Promise<void> {
    if (this.child !== undefined) throw new Error("nats-server is already running");
    const bin = process.env.NATS_SERVER_BIN ?? "nats-server";
    const child = spawn(
      bin,
      [...(this.jetstream ? ["-js"] : []), "-a", "127.0.0.1", "-p", String(this.port), "-sd", this.storeDir, ...this.extraArgs],
      {
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    this.child = child;
    await untilListeningOrExit(child, "nats-server", this.port);
  }

  async stop(hard = false): Promise<void> {
    const child = this.child;
    if (child === undefined) return;
    this.child = undefined;
    await stopChild(child, hard ? "SIGKILL" : "SIGTERM");
  }

  async dispose(): Promise<void> {
    await this.stop(true);
    rmSync(this.storeDir, { recursive: true, force: true });
  }
}

/**
 * A private `postgres` cluster (initdb into a temp folder) on a free port: database `test`, user
 * `postgres`, trust auth. Binaries from PG_BIN_DIR or PATH. As root, its processes run as the
 * `postgres` user, since Postgres refuses to run as root.
 */
export class LocalPostgresServer implements PostgresServer {
  private child: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly dataDir: string,
    private readonly baseDir: string,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/test`;
  }

  static async start(): Promise<LocalPostgresServer> {
    const baseDir = mkdtempSync(join(tmpdir(), "timer-pg-"));
    const dataDir = join(baseDir, "data");
    const user = postgresUser();
    if (user !== undefined) chownSync(baseDir, user.uid, user.gid);
    const initdbArgs = ["-D", dataDir, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8"];
    const result = spawnSync(pgBin("initdb"), initdbArgs, { encoding: "utf8", ...user });
    if (result.status !== 0) throw new Error(`initdb failed (${result.status ?? result.error?.message}): ${result.stderr}`);
    const server = new LocalPostgresServer(await freePort(), dataDir, baseDir);
    try {
      await server.start("postgres");
      const client = new pg.Client({ connectionString: server.url.replace(/\/test$/, "/postgres") });
      await client.connect();
      await client.query("CREATE DATABASE test").finally(() => client.end());
    } catch (error) {
      await server.dispose();
      throw error;
    }
    return server;
  }

  async restart(): Promise<void> {
    await this.start("test");
  }

  private async start(database: string): Promise<void> {
    if (this.child !== undefined) throw new Error("postgres is already running");
    const args = ["-D", this.dataDir, "-h", "127.0.0.1", "-p", String(this.port), "-k", "", "-c", "fsync=off"];
    const child = spawn(pgBin("postgres"), args, { stdio: ["ignore", "ignore", "pipe"], ...postgresUser() });
    this.child = child;
    await untilListeningOrExit(child, "postgres", this.port);
    // Listening is not ready: after a hard stop it answers "the database system is starting up".
    await waitForPostgres(this.url.replace(/\/test$/, `/${database}`), 30_000);
  }

  async stop(hard = false): Promise<void> {
    const child = this.child;
    if (child === undefined) return;
    this.child = undefined;
    // SIGINT is Postgres' "fast shutdown"; a hard stop is SIGQUIT ("immediate shutdown": no
    // checkpoint, crash recovery on the next start), since SIGKILL of the postmaster can leave
    // backends holding the shared memory and block the restart.
    await stopChild(child, hard ? "SIGQUIT" : "SIGINT");
  }

  async dispose(): Promise<void> {
    await this.stop(true);
    rmSync(this.baseDir, { recursive: true, force: true });
  }
}

/** A Postgres program: from PG_BIN_DIR, else PATH, else Debian's newest /usr/lib/postgresql/<v>/bin. */
function pgBin(name: string): string {
  const dir = process.env.PG_BIN_DIR;
  if (dir !== undefined && dir !== "") return join(dir, name);
  if (spawnSync("sh", ["-c", `command -v ${name}`]).status === 0) return name;
  const versions = existsSync("/usr/lib/postgresql") ? readdirSync("/usr/lib/postgresql").filter((v) => /^\d+$/.test(v)) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  return newest === undefined ? name : join("/usr/lib/postgresql", newest, "bin", name);
}

/** Whether startPostgres() can work on the local path (initdb found). */
export function localPostgresAvailable(): boolean {
  return spawnSync(pgBin("initdb"), ["--version"]).status === 0;
}

/** The `postgres` user's ids when running as root (Postgres refuses root), else undefined. */
function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(spawnSync("id", ["-u", "postgres"], { encoding: "utf8" }).stdout.trim());
  const gid = Number(spawnSync("id", ["-g", "postgres"], { encoding: "utf8" }).stdout.trim());
  if (!Number.isInteger(uid) || uid <= 0) throw new Error("a local Postgres started as root needs a 'postgres' user to run as");
  return { uid, gid };
}

async function untilListeningOrExit(child: ChildProcess, name: string, port: number): Promise<void> {
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
    if (stderr.length > 20_000) stderr = stderr.slice(-10_000);
  });
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code) => reject(new Error(`${name} exited with ${code}: ${stderr}`))),
  );
  exited.catch(() => undefined);
  await Promise.race([waitForPort(port, 10_000, name), exited]);
}

async function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.kill(signal);
  });
}

/** Resolves once something accepts TCP connections on 127.0.0.1:`port`. */
export async function waitForPort(port: number, timeoutMs: number, name = "server"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`${name} did not listen on ${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Resolves once Postgres at `url` answers a query. */
export async function waitForPostgres(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
    try {
      await client.connect();
      await client.query("SELECT 1");
      return;
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`postgres did not answer at ${url} within ${timeoutMs} ms: ${String(error)}`, { cause: error });
    } finally {
      await client.end().catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
