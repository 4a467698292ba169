import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SqliteTimerHistory } from "../../src/adapters/sqlite/sqlite-timer-history.js";
import { DEFAULT_MIGRATIONS_FOLDER } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import type { TimerKey } from "../../src/domain/timer.js";

describe("SqliteTimerHistory", () => {
  let folder: string;
  let db: Database.Database;
  let history: SqliteTimerHistory;
  const entriesOf = (serviceCallId: string): string[] =>
    db
      .prepare<[string], string>("SELECT entry FROM timer_history WHERE tenant_id = 'acme' AND service_call_id = ? ORDER BY id")
      .pluck()
      .all(serviceCallId);
  const append = (writes: readonly [string, string][], keep: number, fresh: readonly string[] = []) =>
    db.transaction(() =>
      history.append(
        writes.map(([serviceCallId, entry]) => ({ tenantId: "acme", serviceCallId, entry })),
        keep,
        (key: TimerKey) => fresh.includes(key.serviceCallId),
      ),
    )();

  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), "timer-history-"));
    db = new Database(join(folder, "timer.db"));
    migrate(drizzle({ client: db }), { migrationsFolder: DEFAULT_MIGRATIONS_FOLDER });
    history = new SqliteTimerHistory(db);
  });
  afterEach(() => {
    db.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it("when one batch appends many entries, interleaved over timers new and stored, then each keeps its last ones in order", () => {
    append([["stored", '"s0"']], 5);
    // 100 entries over three timers: each gains far more than it keeps, in one transaction.
    const writes: [string, string][] = Array.from({ length: 100 }, (_, i) => [["stored", "fresh", "short"][i % 3]!, `"e${i}"`]);
    append(writes, 5, ["fresh", "short"]);
    const last = (serviceCallId: string, n: number) =>
      writes
        .filter(([key]) => key === serviceCallId)
        .map(([, entry]) => entry)
        .slice(-n);
    expect(entriesOf("stored")).toEqual(last("stored", 5));
    expect(entriesOf("fresh")).toEqual(last("fresh", 5));
    expect(entriesOf("short")).toEqual(last("short", 5));
  });

  it("when a new timer gains no more than it keeps, then nothing of it is trimmed, and a stored one gives up exactly its oldest", () => {
    append(
      [
        ["new", '"n1"'],
        ["new", '"n2"'],
      ],
      2,
      ["new"],
    );
    expect(entriesOf("new")).toEqual(['"n1"', '"n2"']);
    append([["new", '"n3"']], 2);
    expect(entriesOf("new")).toEqual(['"n2"', '"n3"']);
  });
});
