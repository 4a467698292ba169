import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort } from "./free-port.js";
import { normalizeSeries, scrapeMetrics } from "./prometheus-metrics.js";
import { dropSchema, TEST_DATABASE_URL, TEST_STORE, uniqueSchema } from "./test-postgres.js";

const REPO_ROOT = resolve(import.meta.dirname, "../..");

/**
 * The real service as users run it: `node dist/main.js` (built by `npm test` before vitest runs)
 * in its own process, configured only through its environment. Fault tests kill it with SIGKILL and
 * start it again on the same database file (or Postgres schema, with TEST_TIMER_STORE=postgres).
 */
export class TimerServiceProcess {
  private child: ChildProcess | undefined;
  private exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | undefined;
  /** Every stdout line (pino JSON) of every run, in order. */
  readonly logLines: string[] = [];
  stderr = "";

  private constructor(
    readonly env: Record<string, string>,
    readonly dataDir: string,
    readonly httpPort: number,
    private readonly command: readonly string[],
  ) {}

  /** Starts the service against `brokerUrl` with a fresh database folder; waits until /readyz is 200. */
  static async start(
    brokerUrl: string,
    env: Record<string, string> = {},
    options: { waitReady?: boolean; command?: readonly string[] } = {},
  ): Promise<TimerServiceProcess> {
    const dataDir = mkdtempSync(join(tmpdir(), "timer-svc-"));
    const httpPort = await freePort();
    const storeEnv: Record<string, string> =
      TEST_STORE === "postgres" && env.TIMER_STORE === undefined
        ? { TIMER_STORE: "postgres", TIMER_DATABASE_URL: TEST_DATABASE_URL, TIMER_DATABASE_SCHEMA: uniqueSchema("svc") }
        : {};
    const service = new TimerServiceProcess(
      {
        TIMER_BROKER_URL: brokerUrl,
        TIMER_DB_PATH: join(dataDir, "timer.db"),
        TIMER_HTTP_PORT: String(httpPort),
        TIMER_HTTP_HOST: "127.0.0.1",
        TIMER_LOG_LEVEL: "info",
        ...storeEnv,
        ...env,
      },
      dataDir,
      httpPort,
      options.command ?? [process.execPath, "dist/main.js"],
    );
    await service.restart({ waitReady: options.waitReady ?? true });
    return service;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.httpPort}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the process again with the same environment and database. */
  async restart(options: { waitReady?: boolean } = {}): Promise<void> {
    if (this.child !== undefined) throw new Error("service is already running");
    const [bin, ...args] = this.command;
    const child = spawn(bin!, args, { cwd: REPO_ROOT, env: { ...process.env, ...this.env }, stdio: ["ignore", "pipe", "pipe"] });
    this.child = child;
    let partial = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split("\n");
      partial = lines.pop() ?? "";
      this.logLines.push(...lines);
    });
    child.stderr?.on("data", (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exit = new Promise((resolveExit) => child.once("exit", (code, signal) => resolveExit({ code, signal })));
    if (options.waitReady ?? true) await this.waitUntilReady();
  }

  /** Waits until GET /readyz answers 200 (or fails if the process exits first). */
  async waitUntilReady(timeoutMs = 20_000): Promise<void> {
    await this.waitForReadyz(200, timeoutMs);
  }

  /** Polls /readyz until it answers `status`. */
  async waitForReadyz(status: number, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = "no answer";
    while (Date.now() < deadline) {
      if (this.child === undefined || this.child.exitCode !== null) {
        throw new Error(`service exited before /readyz was ${status}: ${this.stderr}\n${this.logLines.slice(-20).join("\n")}`);
      }
      try {
        const response = await fetch(`${this.baseUrl}/readyz`);
        last = `${response.status} ${await response.text()}`;
        if (response.status === status) return;
      } catch (error) {
        last = String(error);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`/readyz did not answer ${status} within ${timeoutMs} ms; last: ${last}`);
  }

  /** Sends `signal` and waits for the process to end; returns how it ended. */
  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const child = this.child;
    if (child === undefined || this.exit === undefined) throw new Error("service is not running");
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    const result = await this.exit;
    this.child = undefined;
    return result;
  }

  /** Resolves when the process exits by itself. */
  async exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.exit === undefined) throw new Error("service was never started");
    const result = await this.exit;
    this.child = undefined;
    return result;
  }

  /** The value of one metric series from /metrics, e.g. `timer_schedules_pending`. */
  async metric(series: string): Promise<number | undefined> {
    return (await scrapeMetrics(this.baseUrl)).get(normalizeSeries(series));
  }

  /** Parsed log lines (pino JSON); lines that are not JSON are skipped. */
  logs(): Record<string, unknown>[] {
    return this.logLines.flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  }

  /** Kills the process if it runs and removes the database folder. */
  async dispose(): Promise<void> {
    // SIGTERM first: a stopped SQLite instance gives its consumer lease up, so the next test's
    // instance on the same broker need not wait for it to lapse. SIGKILL when that takes too long.
    const child = this.child;
    if (child !== undefined) {
      const killer = setTimeout(() => child.kill("SIGKILL"), 3_000);
      await this.kill("SIGTERM").catch(() => undefined);
      clearTimeout(killer);
    }
    rmSync(this.dataDir, { recursive: true, force: true });
    if (this.env.TIMER_STORE === "postgres" && this.env.TIMER_DATABASE_SCHEMA !== undefined) {
      await dropSchema(this.env.TIMER_DATABASE_SCHEMA).catch(() => undefined);
    }
  }
}
