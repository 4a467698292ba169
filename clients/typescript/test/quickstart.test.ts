/**
 * The README's Quickstart as a newcomer runs it: the packed client installed into a fresh
 * `npm init -y` project (CommonJS), the code block copied out of the README, run against the
 * service. The same project `require`s the package and runs its `timer-client` CLI.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../../../test/support/nats-server.js";
import { TimerServiceProcess } from "../../../test/support/timer-service-process.js";

const PACKAGE_DIR = resolve(import.meta.dirname, "..");
const REPO_ROOT = resolve(PACKAGE_DIR, "../..");

function quickstartBlock(): string {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Quickstart"));
  const block = /```js\n([\s\S]*?)```/.exec(section);
  if (block === null) throw new Error("no js block in the README's Quickstart");
  return block[1]!;
}

describe("the README Quickstart in a fresh CommonJS project", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;
  let work: string;
  let project: string;
  const run = (args: string[], env: Record<string, string> = {}) =>
    spawnSync(args[0]!, args.slice(1), {
      cwd: project,
      env: { ...process.env, NATS_URL: nats.url, ...env },
      encoding: "utf8",
      timeout: 60_000,
    });

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url, { TIMER_POLLING_INTERVAL: "200" });
    work = mkdtempSync(join(tmpdir(), "timer-quickstart-"));
    execFileSync("npm", ["pack", "--pack-destination", work], { cwd: PACKAGE_DIR, stdio: "pipe" });
    const tarball = readdirSync(work).find((f) => f.endsWith(".tgz"))!;
    project = join(work, "app");
    execFileSync("mkdir", ["-p", project]);
    execFileSync("npm", ["init", "-y"], { cwd: project, stdio: "pipe" });
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", join(work, tarball)], { cwd: project, stdio: "pipe" });
  }, 180_000);

  afterAll(async () => {
    await service?.dispose();
    await nats?.dispose();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it("when the README's code block is read, then it is examples/quickstart.mjs", () => {
    expect(quickstartBlock()).toBe(readFileSync(join(REPO_ROOT, "examples/quickstart.mjs"), "utf8"));
  });

  it("when the Quickstart is run twice, then each run prints its DueTimeReached and exits 0", () => {
    writeFileSync(join(project, "quickstart.mjs"), quickstartBlock());
    for (let i = 0; i < 2; i++) {
      const result = run([process.execPath, "quickstart.mjs"]);
      expect(result.status, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/^DueTimeReached \{"tenantId":"acme","serviceCallId":"order-42-reminder-/);
    }
  });

  it("when the package is required from CommonJS, then it loads", () => {
    expect(JSON.parse(readFileSync(join(project, "package.json"), "utf8")).type ?? "commonjs").toBe("commonjs");
    const result = run([process.execPath, "-e", 'const c = require("@timer-service/client"); console.log(typeof c.connectTimerClient)']);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout.trim()).toBe("function");
  });

  it("when the installed timer-client CLI schedules, gets and refuses, then it says what the client says", () => {
    const id = `cli-${process.pid}-${Date.now()}`;
    // --no-confirm: the outcome (CONTRACT §19) is tested in test/cli/cli-confirm.test.ts.
    const scheduled = run(["npx", "timer-client", "schedule", "--tenant", "acme", "--id", id, "--in", "1h", "--no-confirm"]);
    expect(scheduled.status, scheduled.stderr).toBe(0);
    expect(JSON.parse(scheduled.stdout)).toMatchObject({ subject: "timer.commands.schedule.acme" });
    const badCron = run(["npx", "timer-client", "schedule", "--tenant", "acme", "--id", id, "--in", "1h", "--cron", "every monday"]);
    expect(badCron.status).toBe(2);
    expect(badCron.stderr).toContain("timer-client: ScheduleTimer /payload/repeat/cron: needs 5 fields");
    const badAt = run(["npx", "timer-client", "schedule", "--tenant", "acme", "--id", id, "--at", "2026-01-01T09:00:00"]);
    expect([badAt.status, badAt.stderr]).toEqual([
      2,
      'timer-client: --at "2026-01-01T09:00:00" is not a date-time: it has no offset (Z or ±hh:mm); give ISO 8601 with an offset, e.g. 2026-03-01T09:00:00Z or 2026-03-01T10:00:00+01:00, or a delay with --in (e.g. --in 10m)\n(timer-client --help shows the usage)\n',
    ]);
    const missing = run(["npx", "timer-client", "get", "--tenant", "acme"]);
    expect([missing.status, missing.stderr]).toEqual([2, "timer-client: --id is required\n(timer-client --help shows the usage)\n"]);
    const wrongPort = run(["npx", "timer-client", "get", "--tenant", "acme", "--id", id, "--server", "nats://127.0.0.1:1"]);
    expect(wrongPort.stderr).toMatch(/^timer-client: connecting to NATS at nats:\/\/127\.0\.0\.1:1: /);
  });
});
