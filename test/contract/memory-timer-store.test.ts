import { MemoryTimerStore } from "../../src/adapters/memory/memory-timer-store.js";
import { describeSharedTimerStoreContract, describeTimerStoreContract } from "./timer-store.contract.js";

const open = async () => {
  const store = new MemoryTimerStore();
  return { store, cleanup: () => store.close() };
};

describeTimerStoreContract("MemoryTimerStore", open);
describeSharedTimerStoreContract("MemoryTimerStore", open);
