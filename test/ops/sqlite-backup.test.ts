import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerClient } from "../support/timer-client.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TEST_STORE } from "../support/test-postgres.js";
import { waitFor } from "../support/wait-for.js";

/**
 * CONTRACT §18 "Backup (SQLite)", following docs/operations/backup.md: `timer-service backup` while
 * the service applies a steady stream of commands gives a consistent file (its kept counts match
 * its rows) holding every command applied before the backup began; the service starts on that file
 * and fires those timers.
 */
const CLI = resolve(import.meta.dirname, "../../dist/cli/main.js");
const TENANT = "backup";
const run = promisify(execFile);

describe.skipIf(TEST_STORE !== "sqlite")("online backup of a SQLite store (docs/operations/backup.md)", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;
  let restored: TimerServiceProcess | undefined;
  let client: TimerClient;
  const folder = mkdtempSync(join(tmpdir(), "timer-backup-"));

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url, { TIMER_STORE: "sqlite", TIMER_POLLING_INTERVAL: "100" });
    client = await TimerClient.connect(nats.url);
  });

  afterAll(async () => {
    await client?.close();
    await restored?.dispose();
    await service?.dispose();
    await nats?.dispose();
    rmSync(folder, { recursive: true, force: true });
  });

  const accepted = async (instance: TimerServiceProcess) =>
    (await instance.metric('timer_commands_received_total{type="ScheduleTimer",outcome="accepted"}')) ?? 0;

  it("when a backup is taken under command load, then it is consistent, holds every applied command, and the service starts on it", async () => {
    const dueAt = new Date(Date.now() + 20_000).toISOString();
    const before = Array.from({ length: 300 }, (_, i) => `before-${i}`);
    for (const id of before) await client.schedule(TENANT, id, dueAt, { data: { id } });
    await waitFor(
      () => accepted(service),
      (n) => n >= before.length,
      20_000,
      "the commands before the backup applied",
    );

    // Commands keep arriving while the backup runs.
    let loading = true;
    let sent = 0;
    const load = (async () => {
      while (loading) await client.schedule(TENANT, `during-${sent++}`, dueAt);
    })();
    await waitFor(
      () => accepted(service),
      (n) => n > before.length + 50,
      20_000,
      "commands applied during the load",
    );
    const out = join(folder, "backup.db");
    const backup = await run(process.execPath, [CLI, "backup", "--out", out], {
      env: { ...process.env, TIMER_STORE: "sqlite", TIMER_DB_PATH: service.env.TIMER_DB_PATH! },
    });
    const sentAtEnd = sent;
    await new Promise((r) => setTimeout(r, 300));
    loading = false;
    await load;
    expect(sent).toBeGreaterThan(sentAtEnd);

    const summary = JSON.parse(backup.stdout) as { path: string; timers: number; bytes: number };
    expect(summary.path).toBe(out);
    expect(summary.timers).toBeGreaterThan(before.length);
    const copy = new Database(out, { readonly: true });
    try {
      const ids = new Set((copy.prepare("SELECT service_call_id AS id FROM timer_schedules").all() as { id: string }[]).map((r) => r.id));
      for (const id of before) expect(ids.has(id), id).toBe(true);
      // One snapshot: the counts the writer keeps match the rows.
      const counted = copy.prepare("SELECT sum(count) AS n FROM timer_state_counts").get() as { n: number };
      expect(counted.n).toBe(ids.size);
      expect(copy.pragma("integrity_check", { simple: true })).toBe("ok");
    } finally {
      copy.close();
    }

    // Restore: the service stopped, started on the copy (same broker, same consumer).
    await service.kill("SIGTERM");
    restored = await TimerServiceProcess.start(nats.url, { TIMER_STORE: "sqlite", TIMER_DB_PATH: out, TIMER_POLLING_INTERVAL: "100" });
    for (const id of before) await client.waitForDue(TENANT, id, 40_000);
    expect(client.received("DueTimeReached").filter((e) => before.includes(e.body.payload?.serviceCallId as string))).toHaveLength(
      before.length,
    );
  }, 120_000);

  it("when the backup's file exists or the store is Postgres, then it refuses and says what to do", async () => {
    const exists = join(folder, "exists.db");
    const env = { ...process.env, TIMER_STORE: "sqlite", TIMER_DB_PATH: join(folder, "backup.db") };
    await run(process.execPath, [CLI, "backup", "--out", exists], { env });
    await expect(run(process.execPath, [CLI, "backup", "--out", exists], { env })).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining("exists; remove it or name another file"),
    });
    await expect(
      run(process.execPath, [CLI, "backup", "--out", join(folder, "pg.db")], {
        env: { ...process.env, TIMER_STORE: "postgres", TIMER_DATABASE_URL: "postgres://u@127.0.0.1:1/db", TIMER_DATABASE_SCHEMA: "timer" },
      }),
    ).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining("pg_dump --schema=timer") });
  });
});
