import { execFile, spawnSync } from "node:child_process";
import { appendFileSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { freePort } from "./free-port.js";
import { DelayProxy } from "./delay-proxy.js";

/** Debian's PostgreSQL 15 server binaries (initdb, pg_ctl, pg_basebackup); TIMER_TEST_PG_BIN names others. */
export const PG_BIN = process.env.TIMER_TEST_PG_BIN || "/usr/lib/postgresql/15/bin";
/** The standby's name, which the primary's synchronous_standby_names waits for. */
const STANDBY_NAME = "standby";
/** The setting that makes a primary wait for the standby at every commit. */
export const SYNCHRONOUS_STANDBY_OPTION = `-c synchronous_standby_names=${STANDBY_NAME}`;
/** initdb, pg_ctl and postgres refuse to run as root: as root they run as this OS user. */
const PG_OS_USER = "postgres";

/** Why a replica set cannot be started here, or undefined when it can. */
export function replicaSetUnavailable(): string | undefined {
  if (!existsSync(join(PG_BIN, "initdb"))) return `no initdb in ${PG_BIN} (install postgresql or set TIMER_TEST_PG_BIN)`;
  if (process.getuid?.() === 0 && spawnSync("id", ["-u", PG_OS_USER]).status !== 0)
    return `running as root and there is no OS user ${PG_OS_USER}`;
  return undefined;
}

/** Runs one of PG_BIN's programs (asynchronously: the test's event loop keeps measuring meanwhile). */
function runPg(bin: string, args: readonly string[]): Promise<string> {
  const asRoot = process.getuid?.() === 0;
  const command = asRoot ? "runuser" : join(PG_BIN, bin);
  const argv = asRoot ? ["-u", PG_OS_USER, "--", join(PG_BIN, bin), ...args] : [...args];
  return new Promise((resolve, reject) => {
    execFile(command, argv, { encoding: "utf8", timeout: 120_000 }, (error, stdout, stderr) => {
      if (error === null) resolve(stdout);
      else reject(new Error(`${bin} ${args.join(" ")} failed (${error.code ?? error.signal}): ${stderr}${stdout}`));
    });
  });
}

/** One server of the set: its data folder, port and (while running) postmaster pid. */
export interface PostgresNode {
  readonly name: string;
  readonly dataDir: string;
  readonly port: number;
}

/**
 * A primary and a streaming standby on this machine, each its own cluster on its own port and temp
 * folder (never the machine's main cluster). Synchronous: the primary's `synchronous_standby_names`
 * names the standby, so a commit is acknowledged only once the standby has it. It is given on the
 * command line, not in a file, so the standby's copy of the configuration (pg_basebackup) does not
 * inherit it: once promoted, the standby commits alone. Ports and folders are the set's own; always
 * `dispose()`.
 */
export class PostgresReplicaSet {
  /** The relay of the replication stream when it is delayed. */
  #replicationRelay: DelayProxy | undefined;

  #primary: PostgresNode;
  #standby: PostgresNode;
  /** Standbys built so far: each new one gets a folder of its own. */
  #generation = 0;

  private constructor(
    private readonly root: string,
    primary: PostgresNode,
    standby: PostgresNode,
    private readonly synchronous: boolean,
  ) {
    this.#primary = primary;
    this.#standby = standby;
  }

  get primary(): PostgresNode {
    return this.#primary;
  }

  get standby(): PostgresNode {
    return this.#standby;
  }

  /**
   * `standbyOptions`: server options of the standby (`-c name=value …`), e.g. the primary's
   * `synchronous_standby_names`, which a standby ignores until it is promoted. `replicationDelayMs`:
   * the replication stream passes a relay that holds it this long each way (a standby in another
   * zone, or one that lags behind a busy primary), so an asynchronous standby is that far behind.
   */
  static async start(options: { synchronous: boolean; standbyOptions?: string; replicationDelayMs?: number }): Promise<PostgresReplicaSet> {
    const root = mkdtempSync(join(tmpdir(), "timer-pg-replicas-"));
    if (process.getuid?.() === 0) {
      const user = spawnSync("id", ["-u", PG_OS_USER], { encoding: "utf8" }).stdout.trim();
      chownSync(root, Number(user), Number(user));
    }
    const set = new PostgresReplicaSet(
      root,
      { name: "primary", dataDir: join(root, "primary"), port: await freePort() },
      { name: STANDBY_NAME, dataDir: join(root, STANDBY_NAME), port: await freePort() },
      options.synchronous,
    );
    try {
      await runPg("initdb", ["-D", set.primary.dataDir, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"]);
      await set.startNode(set.primary, options.synchronous ? SYNCHRONOUS_STANDBY_OPTION : "");
      await runPg("pg_basebackup", [
        "-h",
        "127.0.0.1",
        "-p",
        String(set.primary.port),
        "-U",
        "postgres",
        "-D",
        set.standby.dataDir,
        "-X",
        "stream",
      ]);
      // Streaming replication, named so the primary's synchronous_standby_names finds it.
      let replicationPort = set.primary.port;
      if ((options.replicationDelayMs ?? 0) > 0) {
        set.#replicationRelay = await DelayProxy.start(set.primary.port);
        set.#replicationRelay.delayMs = options.replicationDelayMs!;
        replicationPort = set.#replicationRelay.port;
      }
      writeFileSync(join(set.standby.dataDir, "standby.signal"), "");
      appendFileSync(
        join(set.standby.dataDir, "postgresql.auto.conf"),
        `primary_conninfo = 'host=127.0.0.1 port=${replicationPort} user=postgres application_name=${STANDBY_NAME}'\n`,
      );
      await set.startNode(set.standby, options.standbyOptions ?? "");
      await set.waitForStreaming();
    } catch (error) {
      await set.dispose();
      throw error;
    }
    return set;
  }

  /** `postgres://postgres@127.0.0.1:<port>/postgres` of one node. */
  urlOf(node: PostgresNode): string {
    return `postgres://postgres@127.0.0.1:${node.port}/postgres`;
  }

  async startNode(node: PostgresNode, extraOptions: string): Promise<void> {
    const options = [
      `-c port=${node.port}`,
      "-c listen_addresses=127.0.0.1",
      `-c unix_socket_directories=${this.root}`,
      "-c max_connections=60",
      "-c shared_buffers=32MB",
      // Only processes die in these tests, not the machine: the page cache keeps what was written.
      "-c fsync=off",
      "-c full_page_writes=off",
      extraOptions,
    ].join(" ");
    await runPg("pg_ctl", ["-D", node.dataDir, "-l", join(this.root, `${node.name}.log`), "-o", options, "-w", "-t", "60", "start"]);
  }

  /** The postmaster's pid, from its pid file; undefined when it does not run. */
  postmasterPid(node: PostgresNode): number | undefined {
    const file = join(node.dataDir, "postmaster.pid");
    if (!existsSync(file)) return undefined;
    const pid = Number(readFileSync(file, "utf8").split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  }

  /** `kill -9` of the node's postmaster and every process it started, as when its machine dies. */
  killNode(node: PostgresNode): void {
    const pid = this.postmasterPid(node);
    if (pid === undefined) return;
    const children = spawnSync("ps", ["-o", "pid=", "--ppid", String(pid)], { encoding: "utf8" })
      .stdout.split("\n")
      .map((line) => Number(line.trim()))
      .filter((child) => child > 0);
    for (const victim of [pid, ...children]) {
      try {
        process.kill(victim, "SIGKILL");
      } catch {
        // already gone
      }
    }
    rmSync(join(node.dataDir, "postmaster.pid"), { force: true });
  }

  /** A clean stop (fast: open sessions are ended, waiting commits too). */
  async stopNode(node: PostgresNode): Promise<void> {
    await runPg("pg_ctl", ["-D", node.dataDir, "-m", "fast", "-w", "-t", "60", "stop"]);
  }

  /** Promotes the standby (pg_ctl promote, waiting until it accepts writes). */
  async promoteStandby(): Promise<void> {
    await runPg("pg_ctl", ["-D", this.standby.dataDir, "-w", "-t", "60", "promote"]);
  }

  /**
   * Commit records in the WAL `node` wrote at or after `fromLsn` (read with pg_waldump from its
   * pg_wal while it is down): after a crash, from the standby's last received position, these are
   * the commits the primary made that the standby never got.
   */
  async commitsInWalAfter(node: PostgresNode, fromLsn: string): Promise<{ commits: number; walEnd: string }> {
    const asRoot = process.getuid?.() === 0;
    const waldump = [join(PG_BIN, "pg_waldump"), "--path", join(node.dataDir, "pg_wal"), "--start", fromLsn, "--rmgr", "Transaction"];
    const [command, ...argv] = asRoot ? ["runuser", "-u", PG_OS_USER, "--", ...waldump] : waldump;
    // It ends with an error at the torn end of a crashed server's WAL; what it printed before counts.
    const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((resolve) =>
      execFile(command!, argv, { encoding: "utf8", timeout: 60_000, maxBuffer: 64 * 1024 * 1024 }, (_, out, err) =>
        resolve({ stdout: out ?? "", stderr: err ?? "" }),
      ),
    );
    return {
      commits: stdout.split("\n").filter((line) => /desc: COMMIT\b/.test(line)).length,
      walEnd: stderr.trim().split("\n").pop() ?? "",
    };
  }

  /**
   * After the primary died: promotes the standby, which becomes the primary, and builds a new
   * standby from it (pg_basebackup), synchronous again when the set is. The new standby's copy of
   * the configuration names no synchronous standby, so that it too commits alone once promoted.
   * Returns the new primary.
   */
  async promoteAndReplace(): Promise<PostgresNode> {
    await this.promoteStandby();
    const dead = this.#primary;
    this.#primary = this.#standby;
    this.#standby = { name: STANDBY_NAME, dataDir: join(this.root, `${STANDBY_NAME}-${++this.#generation}`), port: await freePort() };
    rmSync(dead.dataDir, { recursive: true, force: true });
    return this.#primary;
  }

  /** Builds the standby of the current primary (after promoteAndReplace) and waits until it streams. */
  async startReplacementStandby(): Promise<void> {
    await runPg("pg_basebackup", [
      "-h",
      "127.0.0.1",
      "-p",
      String(this.#primary.port),
      "-U",
      "postgres",
      "-D",
      this.#standby.dataDir,
      "-X",
      "stream",
    ]);
    writeFileSync(join(this.#standby.dataDir, "standby.signal"), "");
    appendFileSync(
      join(this.#standby.dataDir, "postgresql.auto.conf"),
      `primary_conninfo = 'host=127.0.0.1 port=${this.#primary.port} user=postgres application_name=${STANDBY_NAME}'\nsynchronous_standby_names = ''\n`,
    );
    await this.startNode(this.#standby, "");
    if (this.synchronous) {
      // Not in the files pg_basebackup copies: the reload of postgresql.auto.conf on this server only.
      await this.query(this.#primary, `ALTER SYSTEM SET synchronous_standby_names = '${STANDBY_NAME}'`);
      await this.query(this.#primary, "SELECT pg_reload_conf()");
    }
    await this.waitForStreaming();
  }

  /** Runs one statement on a node (a short connection of its own). */
  async query<T extends pg.QueryResultRow>(node: PostgresNode, sql: string): Promise<T[]> {
    const client = new pg.Client({ connectionString: this.urlOf(node), connectionTimeoutMillis: 5_000 });
    await client.connect();
    try {
      return (await client.query<T>(sql)).rows;
    } finally {
      await client.end();
    }
  }

  /** Waits until the primary reports the standby streaming (and, when synchronous, in sync). */
  private async waitForStreaming(): Promise<void> {
    const wanted = this.synchronous ? "sync" : "async";
    const deadline = Date.now() + 30_000;
    for (;;) {
      const rows = await this.query<{ state: string; sync_state: string }>(
        this.primary,
        `SELECT state, sync_state FROM pg_stat_replication WHERE application_name = '${STANDBY_NAME}'`,
      );
      if (rows.some((row) => row.state === "streaming" && row.sync_state === wanted)) return;
      if (Date.now() > deadline) throw new Error(`standby not streaming (${wanted}) within 30 s: ${JSON.stringify(rows)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Stops both servers at once (immediate) and removes their folders. */
  async dispose(): Promise<void> {
    for (const node of [this.standby, this.primary]) {
      if (this.postmasterPid(node) === undefined) continue;
      try {
        await runPg("pg_ctl", ["-D", node.dataDir, "-m", "immediate", "-w", "-t", "30", "stop"]);
      } catch {
        this.killNode(node);
      }
    }
    await this.#replicationRelay?.close();
    rmSync(this.root, { recursive: true, force: true });
  }
}
