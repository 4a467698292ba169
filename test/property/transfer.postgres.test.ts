/**
 * CONTRACT §18 on Postgres: for any store's worth of timers, SQLite export → Postgres import →
 * Postgres export gives the same lines, and a second import keeps everything. Reproduce a failure
 * with FC_SEED=<seed in the describe name>.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { openSqliteTimerTransfer } from "../../src/adapters/sqlite/sqlite-timer-transfer.js";
import { openPostgresTimerTransfer } from "../../src/adapters/postgres/postgres-timer-transfer.js";
import { encodeRecord } from "../../src/app/transfer/transfer-lines.js";
import type { TransferRecord } from "../../src/app/transfer/timer-transfer.js";
import { exportArbitrary } from "../support/transfer-arbitraries.js";
import { exportedLines } from "../support/transfer-fixtures.js";
import { propertySeed } from "../support/property-seed.js";
import { dropSchema, schemaSeries, TEST_DATABASE_URL } from "../support/test-postgres.js";

const seed = propertySeed();
const folder = mkdtempSync(join(tmpdir(), "transfer-property-"));
const schemas = schemaSeries("transfer_prop");
afterAll(async () => {
  rmSync(folder, { recursive: true, force: true });
  await schemas.dropAll();
});

describe(`export → import → export, SQLite to Postgres (seed ${seed})`, () => {
  it("when any store's worth of records moves from SQLite to Postgres, then the Postgres export has the same lines and a second import keeps all", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(exportArbitrary, async (records) => {
        const schema = schemas.next();
        const sqlite = openSqliteTimerTransfer({ path: join(folder, `${++run}.db`), create: true });
        const postgres = await openPostgresTimerTransfer({ url: TEST_DATABASE_URL, schema, timeoutMs: 10_000 });
        try {
          await sqlite.importBatch(records);
          const exported: TransferRecord[] = [];
          for await (const record of sqlite.exportRecords({})) exported.push(record);
          await postgres.importBatch(exported);
          expect(await exportedLines(postgres.exportRecords({}))).toEqual(records.map((record) => encodeRecord(record)));
          const again = await postgres.importBatch(exported);
          expect(again.created + again.replaced + again.prefixCancels.created + again.prefixCancels.replaced).toBe(0);
        } finally {
          await sqlite.close();
          await postgres.close();
          await dropSchema(schema);
        }
      }),
      { seed, numRuns: 15 },
    );
  });
});
