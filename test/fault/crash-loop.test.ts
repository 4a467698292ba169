import { describe, expect, it } from "vitest";
import { runCrashLoop } from "../../scripts/reliability/crash-loop-engine.js";

/** The CI-sized crash loop; `npm run crash-loop` runs the same engine at scale (docs/reliability.md). */
describe("crash loop", () => {
  it("when the service is killed 6 times and the broker twice under a load of 10000 timers, then no accepted timer is lost and none fires early", async () => {
    const seed = process.env.CRASH_LOOP_SEED === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.CRASH_LOOP_SEED);
    const report = await runCrashLoop({
      timers: 10_000,
      kills: 6,
      brokerRestarts: 2,
      rate: 500,
      seed,
      stallMs: 50_000,
      log: (line) => console.info(line),
    });
    console.info(`crash-loop (CRASH_LOOP_SEED=${seed} reruns it): ${JSON.stringify(report)}`);
    expect(report.timers).toBe(10_000);
    expect(report.kills).toBe(6);
    expect(report.brokerRestarts).toBe(2);
    expect(report.lost).toBe(0);
    expect(report.early).toBe(0);
    expect(report.unexpected).toBe(0);
  }, 150_000);
});
