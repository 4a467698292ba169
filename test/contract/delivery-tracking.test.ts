import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryTimerStore } from "../../src/adapters/memory/memory-timer-store.js";
import { MemoryTimerRetention } from "../../src/adapters/memory/memory-timer-retention.js";
import { openSqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import { describeCompletionTrackingContract } from "./delivery-tracking.contract.js";

describeCompletionTrackingContract("memory", async () => {
  const store = new MemoryTimerStore();
  return { store, retention: new MemoryTimerRetention(store), cleanup: () => store.close() };
});

describeCompletionTrackingContract("SQLite", async () => {
  const folder = mkdtempSync(join(tmpdir(), "delivery-"));
  const store = await openSqliteTimerStore({ path: join(folder, "timer.db") });
  return {
    store,
    retention: store.retention,
    cleanup: async () => {
      await store.close();
      rmSync(folder, { recursive: true, force: true });
    },
  };
});
