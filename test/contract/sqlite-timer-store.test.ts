import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteTimerStore, type SqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import { describeTimerStoreContract } from "./timer-store.contract.js";

describeTimerStoreContract("SqliteTimerStore", async () => {
  const folder = mkdtempSync(join(tmpdir(), "timer-store-"));
  const path = join(folder, "timer.db");
  const store = openSqliteTimerStore({ path });
  const opened: SqliteTimerStore[] = [store];
  const reopen = async () => {
    const reopened = openSqliteTimerStore({ path });
    opened.push(reopened);
    return reopened;
  };
  const cleanup = async () => {
    for (const each of opened) await each.close();
    rmSync(folder, { recursive: true, force: true });
  };
  return { store, reopen, cleanup, recordsClaims: false };
});
