import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryTimerStore } from "../../src/adapters/memory/memory-timer-store.js";
import { MemoryTimerQueries } from "../../src/adapters/memory/memory-timer-queries.js";
import { MemoryTimerRetention } from "../../src/adapters/memory/memory-timer-retention.js";
import { openSqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import { SqliteTimerQueries } from "../../src/adapters/sqlite/sqlite-timer-queries.js";
import { describeTimerHistoryContract } from "./timer-history.contract.js";

describeTimerHistoryContract("MemoryTimerStore", async () => {
  const store = new MemoryTimerStore();
  return { store, queries: new MemoryTimerQueries(store), retention: new MemoryTimerRetention(store), cleanup: () => store.close() };
});

describeTimerHistoryContract("SqliteTimerStore", async () => {
  const folder = mkdtempSync(join(tmpdir(), "timer-history-"));
  const store = await openSqliteTimerStore({ path: join(folder, "timer.db") });
  return {
    store,
    queries: new SqliteTimerQueries(store.database),
    retention: store.retention,
    cleanup: async () => {
      await store.close();
      rmSync(folder, { recursive: true, force: true });
    },
  };
});
