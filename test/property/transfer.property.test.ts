/**
 * CONTRACT §18: for any store's worth of timers, export → import → export gives the same lines, on
 * SQLite and between SQLite and the line codec, and a second import keeps everything. (Postgres:
 * transfer.postgres.test.ts.) Reproduce a failure with FC_SEED=<seed in the describe name>.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { openSqliteTimerTransfer } from "../../src/adapters/sqlite/sqlite-timer-transfer.js";
import { decodeRecord, encodeRecord } from "../../src/app/transfer/transfer-lines.js";
import { exportArbitrary, timerArbitrary } from "../support/transfer-arbitraries.js";
import { exportedLines } from "../support/transfer-fixtures.js";
import { propertySeed } from "../support/property-seed.js";
import { CronerCalendar } from "../../src/adapters/cron/croner-calendar.js";

const seed = propertySeed();
const folder = mkdtempSync(join(tmpdir(), "transfer-property-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe(`export lines (seed ${seed})`, () => {
  it("when any timer is encoded, then the line decodes to the same timer and passes every check", () => {
    const calendar = new CronerCalendar();
    fc.assert(
      fc.property(timerArbitrary, (timer) => {
        expect(decodeRecord(encodeRecord({ kind: "timer", timer }), 2, calendar)).toEqual({ kind: "timer", timer });
      }),
      { seed, numRuns: 500 },
    );
  });

  it("when any store's worth of records goes export → import → export through SQLite, then the lines are the same and a second import keeps all", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(exportArbitrary, async (records) => {
        const first = openSqliteTimerTransfer({ path: join(folder, `${++run}-a.db`), create: true });
        const second = openSqliteTimerTransfer({ path: join(folder, `${run}-b.db`), create: true });
        try {
          const lines = records.map((record) => encodeRecord(record));
          await first.importBatch(lines.map((line, i) => decodeRecord(line, i + 2)));
          expect(await exportedLines(first.exportRecords({}))).toEqual(lines);
          const exported: typeof records = [];
          for await (const record of first.exportRecords({})) exported.push(record);
          await second.importBatch(exported);
          expect(await exportedLines(second.exportRecords({}))).toEqual(lines);
          const again = await second.importBatch(exported);
          expect(again.created + again.replaced + again.prefixCancels.created + again.prefixCancels.replaced).toBe(0);
        } finally {
          await first.close();
          await second.close();
        }
      }),
      { seed, numRuns: 40 },
    );
  });
});
