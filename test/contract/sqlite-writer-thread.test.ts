import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import { SqliteWriterThread } from "../../src/adapters/sqlite/sqlite-writer-thread.js";
import type { ScheduleTimerCommand } from "../../src/domain/timer-command.js";

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

/** The writer thread of the SQLite store (SqliteTimerStore): what the contract suite cannot see. */
describe("SQLite writer thread", () => {
  let folder: string;
  let path: string;
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeEach(async () => {
    folder = mkdtempSync(join(tmpdir(), "timer-writer-"));
    path = join(folder, "timer.db");
    await (await openSqliteTimerStore({ path })).close(); // migrates the file
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

  it("when writes are sent back to back, then the thread runs and answers them in call order", async () => {
    const store = await openSqliteTimerStore({ path });
    cleanups.push(() => store.close());
    const answered: string[] = [];

    const first = store.applyCommands([schedule("a")], { nowMs: NOW }).then(() => answered.push("schedule"));
    const record = store.recordFirings([]).then(() => answered.push("record"));
    const second = store
      .applyCommands([{ kind: "cancel", tenantId: "acme", serviceCallId: "a", correlationId: null, timestampMs: 2 }], { nowMs: NOW })
      .then(() => answered.push("cancel"));
    await Promise.all([first, record, second]);

    expect(answered).toEqual(["schedule", "record", "cancel"]);
    expect(await store.get({ tenantId: "acme", serviceCallId: "a" })).toMatchObject({ state: "Cancelled", commandTs: 2 });
  });

  it("when a command batch follows a firing record during a burst, then the record's wait ends and both are answered in call order", async () => {
    const store = await openSqliteTimerStore({ path });
    cleanups.push(() => store.close());
    await store.applyCommands([schedule("a"), schedule("b"), schedule("c")], { nowMs: NOW });
    const firing = async (serviceCallId: string) => {
      const { generation } = (await store.get({ tenantId: "acme", serviceCallId }))!;
      const next = { state: "Reached" as const, dueAtMs: NOW, occurrence: 1, reachedAtMs: NOW, commandTs: 1, updatedAtMs: NOW };
      return { tenantId: "acme", serviceCallId, dueAtMs: NOW, generation, next };
    };
    const [a, b] = [await firing("a"), await firing("b")];
    await store.recordFirings([a]); // the next record is part of a burst: it waits for others
    const answered: string[] = [];

    const record = store.recordFirings([b]).then(() => answered.push("record"));
    const cancel = store
      .applyCommands([{ kind: "cancel", tenantId: "acme", serviceCallId: "c", correlationId: null, timestampMs: 2 }], { nowMs: NOW })
      .then(() => answered.push("cancel"));
    await Promise.all([record, cancel]);

    expect(answered).toEqual(["record", "cancel"]);
    expect(await store.get({ tenantId: "acme", serviceCallId: "b" })).toMatchObject({ state: "Reached" });
    expect(await store.get({ tenantId: "acme", serviceCallId: "c" })).toMatchObject({ state: "Cancelled" });
  });

  it("when a batch is applied, then its decisions come back with only what the service reads of their timers", async () => {
    const store = await openSqliteTimerStore({ path });
    cleanups.push(() => store.close());
    await store.applyCommands([schedule("a")], { nowMs: NOW });

    const [decision] = await store.applyCommands([{ ...schedule("a"), dueAtMs: NOW + 1, data: "payload", timestampMs: 2 }], { nowMs: NOW });

    // The reply crosses from the writer thread: the payload and the other columns stay behind (what
    // the metrics and wake-ups read, and what a command's outcome reports of its timer).
    expect(Object.keys(decision!.previous!).sort()).toEqual([
      "commandTs",
      "completedAtMs",
      "deadlineAtMs",
      "dueAtMs",
      "firedAtMs",
      "generation",
      "occurrence",
      "repeat",
      "state",
    ]);
    expect(decision).toMatchObject({
      outcome: "accepted",
      previous: { state: "Scheduled", dueAtMs: NOW },
      next: { state: "Scheduled", dueAtMs: NOW + 1 },
    });
    expect(decision!.next).not.toHaveProperty("data");
  });

  it("when another connection holds the write lock, then a write fails with SQLite's busy code", async () => {
    const thread = await start();
    const other = new Database(path);
    cleanups.push(() => void other.close());
    other.exec("BEGIN EXCLUSIVE");

    await expect(thread.submit({ op: "probe" })).rejects.toMatchObject({ code: expect.stringMatching(/^SQLITE_BUSY/) });
    other.exec("ROLLBACK");
    await expect(thread.submit({ op: "probe" })).resolves.toBeUndefined();
  });

  it("when the thread is gone, then every request fails and says why", async () => {
    const thread = await start();
    await thread.close();

    await expect(thread.submit({ op: "probe" })).rejects.toThrow(/writer thread is closed/);
    expect(thread.failure?.message).toMatch(/writer thread is closed/);
  });

  it("when a batch cannot be sent to the thread, then it fails before anything is written and the next write runs", async () => {
    const store = await openSqliteTimerStore({ path });
    cleanups.push(() => store.close());
    // A function cannot cross the thread boundary: postMessage throws before sending the batch.
    const uncopyable = { ...schedule("a"), data: (() => "x") as unknown as string };

    await expect(store.applyCommands([uncopyable], { nowMs: NOW })).rejects.toThrow(/could not be cloned/);
    await store.applyCommands([schedule("b")], { nowMs: NOW });

    expect(await store.get({ tenantId: "acme", serviceCallId: "a" })).toBeUndefined();
    expect(await store.get({ tenantId: "acme", serviceCallId: "b" })).toMatchObject({ state: "Scheduled" });
  });

  it("when a batch fails in its transaction, then nothing of it is stored, readiness says so, and the next write clears it", async () => {
    const store = await openSqliteTimerStore({ path, busyTimeoutMs: 50 });
    cleanups.push(() => store.close());
    await store.applyCommands([schedule("existing")], { nowMs: NOW });
    const other = new Database(path);
    cleanups.push(() => void other.close());
    other.exec("BEGIN EXCLUSIVE");

    const failing = store.applyCommands([{ ...schedule("existing"), dueAtMs: NOW + 5, timestampMs: 2 }, schedule("new")], { nowMs: NOW });
    await expect(failing).rejects.toMatchObject({ code: expect.stringMatching(/^SQLITE_BUSY/) });
    expect(store.isWritable()).toBe(false);
    other.exec("ROLLBACK");

    expect(await store.get({ tenantId: "acme", serviceCallId: "existing" })).toMatchObject({ dueAtMs: NOW, commandTs: 1 });
    expect(await store.get({ tenantId: "acme", serviceCallId: "new" })).toBeUndefined();
    await store.applyCommands([schedule("b")], { nowMs: NOW });
    expect(store.isWritable()).toBe(true);
  });
});
