import { randomInt } from "node:crypto";
import { describe, expect, it } from "vitest";
import { runChaos } from "../../scripts/chaos/run.js";
import { TEST_STORE } from "../support/test-postgres.js";

/** The nemesis phase; with start-up, the drain and clean-up the file takes about two minutes. */
const NEMESIS_MS = 70_000;
const seed = process.env.CHAOS_SEED === undefined ? randomInt(1, 2 ** 31) : Number(process.env.CHAOS_SEED);

/**
 * `npm run chaos` in small (docs/reliability.md, "Nemesis run"): a 3-node NATS cluster, 3 service
 * instances on one Postgres schema, a fault every 5–15 s, and the checker over the whole history.
 * The seed changes each run and is printed; CHAOS_SEED=N replays a schedule.
 */
// Postgres whatever TEST_TIMER_STORE says: run once, in the default pass.
describe.skipIf(TEST_STORE === "postgres")("chaos smoke", () => {
  it("when random faults hit instances, broker nodes, links, clocks and storage, then nothing is lost, early, or fired after its cancel", async () => {
    const log = (line: string): void => console.info(line);
    const { summary, notReady } = await runChaos({ seed, durationMs: NEMESIS_MS, rate: 5, log });
    console.info(`chaos smoke (CHAOS_SEED=${seed}): ${JSON.stringify(summary)}`);
    expect(summary.faults.injected, `seed ${seed}: faults injected`).toBeGreaterThan(0);
    expect(summary.timers.mustFire, `seed ${seed}: timers that must fire`).toBeGreaterThan(100);
    expect(summary.violationExamples, `seed ${seed}: violations`).toEqual([]);
    expect(notReady, `seed ${seed}: instances not ready after the faults`).toEqual([]);
    expect(summary.ok).toBe(true);
  }, 240_000);
});
