import type pg from "pg";
import { describe, expect, it } from "vitest";
import { GrowthAnalyzer } from "../../../src/adapters/postgres/growth-analyzer.js";

/** Lets every pending promise chain run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A pool whose table holds `table.rows` rows, estimated as of its last ANALYZE (`table.estimate`,
 * -1 before any); ANALYZE answers when `finishAnalyze` is called.
 */
function fakePool(table: { rows: number; estimate: number }) {
  const analyzes: number[] = [];
  let pending: (() => void) | undefined;
  const pool = {
    async query(text: string) {
      if (text.startsWith("ANALYZE")) {
        analyzes.push(table.rows);
        await new Promise<void>((resolve) => (pending = resolve));
        table.estimate = table.rows;
        return { rows: [] };
      }
      return { rows: [{ reltuples: table.estimate }] };
    },
  };
  const finishAnalyze = async () => {
    await settle();
    pending?.();
    pending = undefined;
    await settle();
  };
  return { pool: pool as unknown as pg.Pool, analyzes, finishAnalyze };
}

describe("GrowthAnalyzer", () => {
  it("when a table fills from empty, then it is analyzed after the first 500 rows and each time it doubles", async () => {
    const table = { rows: 0, estimate: -1 };
    const { pool, analyzes, finishAnalyze } = fakePool(table);
    const analyzer = new GrowthAnalyzer(pool);
    const insert = async (n: number) => {
      table.rows += n;
      analyzer.inserted(n);
      await settle();
    };

    await insert(499);
    expect(analyzes).toEqual([]);
    await insert(1);
    expect(analyzes).toEqual([500]);
    await finishAnalyze();

    await insert(499);
    expect(analyzes).toEqual([500]);
    await insert(1);
    expect(analyzes).toEqual([500, 1_000]);
    await finishAnalyze();

    await insert(999);
    expect(analyzes).toEqual([500, 1_000]);
    await insert(1);
    expect(analyzes).toEqual([500, 1_000, 2_000]);
  });

  it("when the store opens on a table already analyzed large, then it waits for the table to double", async () => {
    const table = { rows: 100_000, estimate: 100_000 };
    const { pool, analyzes, finishAnalyze } = fakePool(table);
    const analyzer = new GrowthAnalyzer(pool);

    for (let i = 0; i < 199; i++) {
      table.rows += 500;
      analyzer.inserted(500);
      await settle();
    }
    expect(analyzes).toEqual([]);
    table.rows += 500;
    analyzer.inserted(500);
    await finishAnalyze();
    expect(analyzes).toEqual([200_000]);
  });

  it("when rows arrive while an ANALYZE runs, then no second one starts, and they count toward the next", async () => {
    const table = { rows: 0, estimate: -1 };
    const { pool, analyzes, finishAnalyze } = fakePool(table);
    const analyzer = new GrowthAnalyzer(pool);

    table.rows = 600;
    analyzer.inserted(600);
    await settle();
    table.rows = 2_000;
    analyzer.inserted(1_400);
    expect(analyzes).toEqual([600]);
    await finishAnalyze();

    // 1,400 counted against the 2,000 the table held at that ANALYZE: 600 more start the next.
    table.rows = 2_599;
    analyzer.inserted(599);
    await settle();
    expect(analyzes).toEqual([600]);
    analyzer.inserted(1);
    await settle();
    expect(analyzes).toEqual([600, 2_599]);
  });

  it("when an import ends with rows not yet analyzed, then settle analyzes them; with none, it does nothing", async () => {
    const table = { rows: 100, estimate: -1 };
    const { pool, analyzes, finishAnalyze } = fakePool(table);
    const analyzer = new GrowthAnalyzer(pool);
    analyzer.inserted(100);

    const settled = analyzer.settle();
    await finishAnalyze();
    await settled;
    expect(analyzes).toEqual([100]);

    await analyzer.settle();
    expect(analyzes).toEqual([100]);
  });
});
