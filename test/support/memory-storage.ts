import type { Storage } from "../../src/app/storage.js";
import { MemoryTimerStore } from "../../src/adapters/memory/memory-timer-store.js";
import { MemoryTimerQueries } from "../../src/adapters/memory/memory-timer-queries.js";
import { MemoryTimerRetention } from "../../src/adapters/memory/memory-timer-retention.js";

/** The in-memory store as a service's storage, for tests that run the whole service without a file. */
export function memoryStorage(store: MemoryTimerStore = new MemoryTimerStore()): Storage {
  return {
    kind: "memory",
    store,
    queries: new MemoryTimerQueries(store),
    retention: new MemoryTimerRetention(store),
    shared: false,
    close: () => store.close(),
  };
}
