import { spawnSync, type ChildProcess } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import { delimiter, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { waitFor as pollFor } from "../support/wait-for.js";

/** The repository's root folder (test/ops/.. /..). */
export const repoRoot = resolve(fileURLToPath(new URL(".", import.meta.url)), "..", "..");

/** How long a wait for a process or a scrape may take before the test fails. */
export const DEADLINE_MS = 30_000;

/** Full path of an executable found on PATH, or undefined. */
export function findBinary(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this folder
    }
  }
  return undefined;
}

/** Like findBinary, but throws a message that says how to install the tool. */
export function requireBinary(name: string, howToInstall: string): string {
  const bin = findBinary(name);
  if (bin === undefined) throw new Error(`${name} is not on PATH; ${howToInstall}`);
  return bin;
}

export interface CommandResult {
  readonly code: number | null;
  readonly output: string;
}

/** Runs a command to completion in the repo root; output is stdout and stderr together. */
export function runCommand(bin: string, args: readonly string[], cwd = repoRoot): CommandResult {
  const result = spawnSync(bin, args, { cwd, encoding: "utf8", timeout: 60_000 });
  if (result.error !== undefined) throw result.error;
  return { code: result.status, output: `${result.stdout}${result.stderr}` };
}

/** A child process whose recent output is kept for failure messages. */
export class Child {
  private output = "";

  constructor(
    readonly name: string,
    readonly process: ChildProcess,
  ) {
    const keep = (chunk: Buffer): void => {
      this.output = (this.output + chunk.toString()).slice(-8_000);
    };
    process.stdout?.on("data", keep);
    process.stderr?.on("data", keep);
  }

  get exited(): boolean {
    return this.process.exitCode !== null || this.process.signalCode !== null;
  }

  describe(): string {
    const state = this.exited ? `exited (${this.process.exitCode ?? this.process.signalCode})` : "running";
    return `${this.name} ${state}; last output:\n${this.output}`;
  }

  /** SIGTERM, then SIGKILL after 10 s; resolves once the process has exited. */
  async stop(): Promise<void> {
    if (this.exited) return;
    const exit = new Promise<void>((resolve) => this.process.once("exit", () => resolve()));
    this.process.kill("SIGTERM");
    const timer = setTimeout(() => this.process.kill("SIGKILL"), 10_000);
    await exit;
    clearTimeout(timer);
  }
}

/**
 * Calls `probe` every 200 ms until it returns a value. Fails after DEADLINE_MS, or as soon as one
 * of `children` exits, with `what` and the children's last output.
 */
export async function waitFor<T>(what: string, children: readonly Child[], probe: () => Promise<T | undefined>): Promise<T> {
  try {
    return (await pollFor(probe, {
      what,
      until: (value) => value !== undefined,
      timeoutMs: DEADLINE_MS,
      everyMs: 200,
      retryErrors: true,
      abortIf: () => children.find((c) => c.exited)?.describe(),
    })) as T;
  } catch (error) {
    if (children.some((c) => c.exited)) throw error;
    const details = children.map((c) => c.describe()).join("\n\n");
    throw new Error(`${what} within ${DEADLINE_MS} ms (last: ${String(error)})\n\n${details}`, { cause: error });
  }
}

/** The built service (`node dist/main.js`) on a free port with its own database: the one spawner of the tests. */
export type RunningService = TimerServiceProcess;

/**
 * Starts `node dist/main.js` (build it first: `npm run build`, which `npm test` runs) and waits
 * until GET /readyz answers 200. `env` adds or overrides TIMER_* variables.
 */
export async function startService(brokerUrl: string, env: Record<string, string> = {}): Promise<RunningService> {
  const main = join(repoRoot, "dist", "main.js");
  if (!existsSync(main)) throw new Error(`${main} is missing: run \`npm run build\` first (npm test does)`);
  return TimerServiceProcess.start(brokerUrl, { TIMER_LOG_LEVEL: "warn", ...env });
}
