import type { Storage } from "../../app/storage.js";
import { MemoryTimerStore } from "./memory-timer-store.js";
import { MemoryTimerQueries } from "./memory-timer-queries.js";
import { MemoryTimerRetention } from "./memory-timer-retention.js";

/** Timers in this process only (tests, demos): lost when it ends. */
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
