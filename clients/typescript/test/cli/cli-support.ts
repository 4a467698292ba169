import { spawn } from "node:child_process";
import { resolve } from "node:path";

/** The committed bin stub, as npm links it (`npm run build` first: it loads dist/cli.js). */
export const CLI = resolve(import.meta.dirname, "../../bin/timer-client.js");

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `timer-client args` to its end; NATS_URL and TIMER_BROKER_URL come only from `env`. */
export function runCli(args: readonly string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, NATS_URL: "", TIMER_BROKER_URL: "", TIMER_SUBJECT_PREFIX: "", ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.once("exit", (code) => done({ code, stdout, stderr }));
  });
}

/** Runs the CLI with `--server serverUrl`. */
export function runCliAgainst(serverUrl: string, ...args: string[]): Promise<CliResult> {
  return runCli([...args, "--server", serverUrl]);
}
