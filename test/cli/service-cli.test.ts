/** `timer-service` keeps what runs on the service's side; the commands over NATS are timer-client's, and it says so. */
import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const CLI = resolve(import.meta.dirname, "../../dist/cli/main.js");
const run = promisify(execFile);

async function serviceCli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("timer-service CLI", () => {
  it.each(["schedule", "cancel", "get", "list", "stats", "watch", "retry", "history"])(
    "when asked to %s, then it exits 2 and gives the timer-client command line",
    async (command) => {
      const result = await serviceCli(command, "--tenant", "acme");
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(
        `"${command}" is a command of timer-client (in @timer-service/client): npx timer-client ${command} --tenant acme`,
      );
    },
  );

  it("when asked for help, then it lists start, export, import and backup and points to timer-client", async () => {
    const result = await serviceCli("--help");
    expect(result.code).toBe(0);
    for (const command of ["start", "export", "import", "backup"]) expect(result.stdout).toContain(`timer-service ${command}`);
    expect(result.stdout).not.toMatch(/timer-service (schedule|list|watch|stats|retry)/);
    expect(result.stdout).toContain("npx timer-client --help");
  });
});
