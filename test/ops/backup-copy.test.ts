import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerClient } from "../support/timer-client.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TEST_STORE } from "../support/test-postgres.js";
import { waitFor } from "../support/wait-for.js";

/**
 * docs/operations/backup.md "Starting a copy beside the service": a copy started with the variables
 * of that page's block, on the live broker, takes no live command and publishes nothing on the
 * live subjects, while the live service keeps its lease and works on.
 */
const repoRoot = resolve(import.meta.dirname, "../..");
const CLI = join(repoRoot, "dist/cli/main.js");
const TENANT = "copy";
const run = promisify(execFile);

/** The `NAME=value` assignments of the sh block under the page's "Starting a copy" heading. */
function documentedCopyVariables(): Record<string, string> {
  const page = readFileSync(join(repoRoot, "docs/operations/backup.md"), "utf8");
  const section = page.split("## Starting a copy beside the service")[1]?.split("\n## ")[0] ?? "";
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
  return Object.fromEntries([...block.matchAll(/^\s*([A-Z][A-Z0-9_]*)=(\S+)\s*\\?$/gm)].map((m) => [m[1]!, m[2]!]));
}

describe.skipIf(TEST_STORE !== "sqlite")("a copy of a SQLite store beside the live service (docs/operations/backup.md)", () => {
  let nats: NatsServerProcess;
  let live: TimerServiceProcess;
  let copy: TimerServiceProcess | undefined;
  let liveClient: TimerClient;
  let copyClient: TimerClient;
  const folder = mkdtempSync(join(tmpdir(), "timer-copy-"));
  const documented = documentedCopyVariables();

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    live = await TimerServiceProcess.start(nats.url, { TIMER_STORE: "sqlite", TIMER_POLLING_INTERVAL: "100" });
    liveClient = await TimerClient.connect(nats.url);
    copyClient = await TimerClient.connect(nats.url, documented.TIMER_SUBJECT_PREFIX ?? "timer");
  });

  afterAll(async () => {
    await liveClient?.close();
    await copyClient?.close();
    await copy?.dispose();
    await live?.dispose();
    await nats?.dispose();
    rmSync(folder, { recursive: true, force: true });
  });

  it("when the page's block is read, then it changes the file, the port, the prefix, both streams and the consumer", () => {
    expect(Object.keys(documented).sort()).toEqual(
      ["TIMER_COMMANDS_STREAM", "TIMER_CONSUMER", "TIMER_DB_PATH", "TIMER_EVENTS_STREAM", "TIMER_HTTP_PORT", "TIMER_SUBJECT_PREFIX"].sort(),
    );
  });

  it("when the copy runs beside the live service, then live commands go to the live service only and the copy fires on its own subjects", async () => {
    const accepted = async (instance: TimerServiceProcess) =>
      (await instance.metric('timer_commands_received_total{type="ScheduleTimer",outcome="accepted"}')) ?? 0;
    // A timer in the backup, due once both run: each fires it, on its own subjects.
    await liveClient.schedule(TENANT, "in-backup", new Date(Date.now() + 8_000));
    await waitFor(
      () => accepted(live),
      (n) => n >= 1,
      20_000,
      "the live service applied the command",
    );
    const out = join(folder, "copy.db");
    await run(process.execPath, [CLI, "backup", "--out", out], {
      env: { ...process.env, TIMER_STORE: "sqlite", TIMER_DB_PATH: live.env.TIMER_DB_PATH! },
    });

    // The test's own file and free port stand in for the page's examples.
    const { TIMER_DB_PATH: _file, TIMER_HTTP_PORT: _port, ...names } = documented;
    copy = await TimerServiceProcess.start(nats.url, {
      TIMER_STORE: "sqlite",
      TIMER_DB_PATH: out,
      TIMER_POLLING_INTERVAL: "100",
      ...names,
    });

    const ids = Array.from({ length: 20 }, (_, i) => `live-${i}`);
    for (const id of ids) await liveClient.schedule(TENANT, id, new Date());
    for (const id of ids) await liveClient.waitForDue(TENANT, id, 20_000);
    await liveClient.waitForDue(TENANT, "in-backup", 20_000);
    await copyClient.waitForDue(TENANT, "in-backup", 20_000);

    expect(await accepted(copy)).toBe(0);
    expect(liveClient.received("DueTimeReached", "in-backup")).toHaveLength(1);
    expect(copyClient.received("DueTimeReached").map((event) => event.body.payload?.serviceCallId)).toEqual(["in-backup"]);
    expect((await fetch(`${live.baseUrl}/readyz`)).status).toBe(200);
  }, 90_000);
});
