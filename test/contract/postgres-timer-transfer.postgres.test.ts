import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openPostgresTimerStore, type PostgresTimerStore } from "../../src/adapters/postgres/postgres-timer-store.js";
import { openPostgresTimerTransfer } from "../../src/adapters/postgres/postgres-timer-transfer.js";
import { openSqliteTimerTransfer } from "../../src/adapters/sqlite/sqlite-timer-transfer.js";
import type { TimerTransfer, TransferRecord } from "../../src/app/transfer/timer-transfer.js";
import { dropSchema, schemaSeries, TEST_DATABASE_URL } from "../support/test-postgres.js";
import { exportedLines, exportLines, fixtureRecords } from "../support/transfer-fixtures.js";
import { describeTimerTransferContract } from "./timer-transfer.contract.js";

const schemas = schemaSeries("transfer");
afterAll(() => schemas.dropAll());

const openTransfer = (schema: string) => openPostgresTimerTransfer({ url: TEST_DATABASE_URL, schema, timeoutMs: 10_000 });

describeTimerTransferContract("PostgresTimerTransfer", async () => {
  const schema = schemas.next();
  const transfer = await openTransfer(schema);
  const stores: PostgresTimerStore[] = [];
  return {
    transfer,
    openStore: async () => {
      const store = await openPostgresTimerStore({ url: TEST_DATABASE_URL, schema, maxConnections: 2 });
      stores.push(store);
      return store;
    },
    openTransfer: () => openTransfer(schema),
    cleanup: async () => {
      await transfer.close();
      for (const store of stores) await store.close();
      await dropSchema(schema);
    },
  };
});

/** Everything one export holds, imported in one batch. */
async function copy(from: TimerTransfer, to: TimerTransfer): Promise<void> {
  const records: TransferRecord[] = [];
  for await (const record of from.exportRecords({ history: true })) records.push(record);
  await to.importBatch(records);
}

describe("moving between SQLite and Postgres", () => {
  it("when timers in every state go SQLite → Postgres → SQLite, then every export holds the same lines, and importing again keeps everything", async () => {
    const folder = mkdtempSync(join(tmpdir(), "timer-transfer-"));
    const schema = schemas.next();
    const source = openSqliteTimerTransfer({ path: join(folder, "source.db"), create: true });
    const postgres = await openTransfer(schema);
    const back = openSqliteTimerTransfer({ path: join(folder, "back.db"), create: true });
    try {
      const records = fixtureRecords(Date.parse("2026-11-28T12:00:00.000Z"));
      await source.importBatch(records);
      await copy(source, postgres);
      await copy(postgres, back);
      const expected = exportLines(records);
      expect(await exportedLines(source.exportRecords({ history: true }))).toEqual(expected);
      expect(await exportedLines(postgres.exportRecords({ history: true }))).toEqual(expected);
      expect(await exportedLines(back.exportRecords({ history: true }))).toEqual(expected);
      const timers = records.filter((r) => r.kind === "timer").length;
      for (const target of [postgres, back]) {
        const again: TransferRecord[] = [];
        for await (const record of source.exportRecords({ history: true })) again.push(record);
        expect(await target.importBatch(again)).toEqual({
          created: 0,
          replaced: 0,
          kept: timers,
          prefixCancels: { created: 0, replaced: 0, kept: 1 },
        });
      }
    } finally {
      await source.close();
      await postgres.close();
      await back.close();
      rmSync(folder, { recursive: true, force: true });
      await dropSchema(schema);
    }
  });
});
