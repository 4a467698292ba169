import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";

/** The built CLI (`npm run build` first). */
export const CLI = resolve(import.meta.dirname, "../../dist/cli/main.js");

const run = promisify(execFile);

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI to its end with `--server serverUrl` (TIMER_BROKER_URL cleared, so the flag is what counts). */
export async function runCliAgainst(serverUrl: string, ...args: string[]): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args, "--server", serverUrl], {
      env: { ...process.env, TIMER_BROKER_URL: "" },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
