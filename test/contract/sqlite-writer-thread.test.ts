import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import { SqliteWriterThread } from "../../src/adapters/sqlite/sqlite-writer-thread.js";
import { openThreadedSqliteTimerStore } from "../../src/adapters/sqlite/threaded-sqlite-timer-store.js";
import { timerColumnValues } from "../../src/adapters/storage/timer-columns.js";
import { decideCommand } from "../../src/domain/timer-rules.js";
import type { ScheduleTimerCommand } from "../../src/domain/timer-command.js";
import type { DecideCommand } from "../../src/app/timer-store.js";

const NOW = 1_764_108_000_000;
const schedule = (serviceCallId: string): ScheduleTimerCommand => ({
  kind: "schedule",
  tenantId: "acme",
  serviceCallId,
  dueAtMs: NOW,
  data: null,
  correlationId: null,
  timestampMs: 1,
});

/** The writer thread of the SQLite store (ThreadedSqliteTimerStore): what the contract suite cannot see. */
describe("SQLite writer thread", () => {
  let folder: string;
  let path: string;
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeEach(async () => {
    folder = mkdtempSync(join(tmpdir(), "timer-writer-"));
    path = join(folder, "timer.db");
    await openSqliteTimerStore({ path }).close(); // migrates the file
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    rmSync(folder, { recursive: true, force: true });
  });

  async function start(): Promise<SqliteWriterThread> {
    const thread = await SqliteWriterThread.start(path, { busyTimeoutMs: 50 });
    cleanups.push(() => thread.close());
    return thread;
  }

  it("when a command batch waits for its decision, then a firing record sent meanwhile waits for the batch's commit", async () => {
    const thread = await start();
    const answered: string[] = [];
    const { session, read } = thread.begin("beginCommands", [[{ tenantId: "acme", serviceCallId: "a" }]]);
    expect(await read).toEqual([undefined]);

    const record = thread.request("recordFirings", [[[]]]).then(() => answered.push("record"));
    const probe = thread.request("probe", []).then(() => answered.push("probe"));
    const next = decideCommand(undefined, schedule("a"), NOW).next!;
    await thread.request("commitCommands", [[timerColumnValues(next)], [], NOW], session).then(() => answered.push("commit"));
    await Promise.all([record, probe]);

    expect(answered).toEqual(["commit", "record", "probe"]);
  });

  it("when another connection holds the write lock, then a write fails with SQLite's busy code", async () => {
    const thread = await start();
    const other = new Database(path);
    cleanups.push(() => void other.close());
    other.exec("BEGIN EXCLUSIVE");

    await expect(thread.request("probe", [])).rejects.toMatchObject({ code: expect.stringMatching(/^SQLITE_BUSY/) });
    other.exec("ROLLBACK");
    await expect(thread.request("probe", [])).resolves.toBeUndefined();
  });

  it("when the thread is gone, then every request fails and says why", async () => {
    const thread = await start();
    await thread.close();

    await expect(thread.request("probe", [])).rejects.toThrow(/writer thread is closed/);
    expect(thread.failure?.message).toMatch(/writer thread is closed/);
  });

  it("when a batch's writes cannot be sent to the thread, then the batch is rolled back and the next write runs", async () => {
    const store = await openThreadedSqliteTimerStore({ path });
    cleanups.push(() => store.close());
    const uncopyable: DecideCommand = (current, command) => {
      const decision = decideCommand(current, command, NOW);
      // A function cannot cross the thread boundary: postMessage throws before sending the commit.
      return { outcome: "accepted", previous: current, next: { ...decision.next!, data: (() => "x") as unknown as string } };
    };

    await expect(store.applyCommands([schedule("a")], uncopyable)).rejects.toThrow(/could not be cloned/);
    await store.applyCommands([schedule("b")], (current, command) => decideCommand(current, command, NOW));

    expect(await store.get({ tenantId: "acme", serviceCallId: "a" })).toBeUndefined();
    expect(await store.get({ tenantId: "acme", serviceCallId: "b" })).toMatchObject({ state: "Scheduled" });
  });

  it("when a decision throws, then the batch is rolled back and the next write runs", async () => {
    const store = await openThreadedSqliteTimerStore({ path });
    cleanups.push(() => store.close());
    const failure = new Error("decide failed");

    await expect(
      store.applyCommands([schedule("a")], () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
    await store.applyCommands([schedule("b")], (current, command) => decideCommand(current, command, NOW));

    expect(await store.get({ tenantId: "acme", serviceCallId: "a" })).toBeUndefined();
    expect(await store.get({ tenantId: "acme", serviceCallId: "b" })).toMatchObject({ state: "Scheduled" });
    expect(store.isWritable()).toBe(true);
  });
});
