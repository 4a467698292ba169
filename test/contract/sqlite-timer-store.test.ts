import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteTimerStore, type SqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import { describeDurableTimerStoreContract, describeTimerStoreContract } from "./timer-store.contract.js";

const open = async () => {
  const folder = mkdtempSync(join(tmpdir(), "timer-store-"));
  const path = join(folder, "timer.db");
  const store = await openSqliteTimerStore({ path });
  const opened: SqliteTimerStore[] = [store];
  const reopen = async () => {
    const reopened = await openSqliteTimerStore({ path });
    opened.push(reopened);
    return reopened;
  };
  const cleanup = async () => {
    for (const each of opened) await each.close();
    rmSync(folder, { recursive: true, force: true });
  };
  return { store, reopen, cleanup };
};

describeTimerStoreContract("SqliteTimerStore", open);
describeDurableTimerStoreContract("SqliteTimerStore", open);
