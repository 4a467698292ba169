import { MemoryTimerStore } from "../../src/adapters/memory/memory-timer-store.js";
import { describeTimerStoreContract } from "./timer-store.contract.js";

describeTimerStoreContract("MemoryTimerStore", async () => {
  const store = new MemoryTimerStore();
  return { store, cleanup: () => store.close(), recordsClaims: true };
});
