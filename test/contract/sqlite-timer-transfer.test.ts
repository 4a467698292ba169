import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteTimerStore, type SqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import { openSqliteTimerTransfer } from "../../src/adapters/sqlite/sqlite-timer-transfer.js";
import { describeTimerTransferContract } from "./timer-transfer.contract.js";

describeTimerTransferContract("SqliteTimerTransfer", async () => {
  const folder = mkdtempSync(join(tmpdir(), "timer-transfer-"));
  const path = join(folder, "timer.db");
  const transfer = openSqliteTimerTransfer({ path, create: true });
  const stores: SqliteTimerStore[] = [];
  return {
    transfer,
    openStore: async () => {
      const store = await openSqliteTimerStore({ path });
      stores.push(store);
      return store;
    },
    openTransfer: async () => openSqliteTimerTransfer({ path, create: false }),
    cleanup: async () => {
      await transfer.close();
      for (const store of stores) await store.close();
      rmSync(folder, { recursive: true, force: true });
    },
  };
});
