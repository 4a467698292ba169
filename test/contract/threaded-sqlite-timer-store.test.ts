import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openThreadedSqliteTimerStore, type ThreadedSqliteTimerStore } from "../../src/adapters/sqlite/threaded-sqlite-timer-store.js";
import { describeDurableTimerStoreContract, describeTimerStoreContract } from "./timer-store.contract.js";

const open = async () => {
  const folder = mkdtempSync(join(tmpdir(), "timer-store-"));
  const path = join(folder, "timer.db");
  const store = await openThreadedSqliteTimerStore({ path });
  const opened: ThreadedSqliteTimerStore[] = [store];
  const reopen = async () => {
    const reopened = await openThreadedSqliteTimerStore({ path });
    opened.push(reopened);
    return reopened;
  };
  const cleanup = async () => {
    for (const each of opened) await each.close();
    rmSync(folder, { recursive: true, force: true });
  };
  return { store, reopen, cleanup };
};

describeTimerStoreContract("ThreadedSqliteTimerStore", open);
describeDurableTimerStoreContract("ThreadedSqliteTimerStore", open);
