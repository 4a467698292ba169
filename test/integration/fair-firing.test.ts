/**
 * Fair firing against the real service (CONTRACT §12), on the store of TEST_TIMER_STORE: while tenant
 * A drains a backlog due at one instant, tenant B's timers due just after it fire on time, not after
 * A's whole backlog. A's backlog is 20,000 here (the bench's noisyNeighbour runs 100,000); without
 * fairness B waited for all of it (about 2 s per 20,000 on this machine's kind).
 */
import { afterEach, describe, expect, it } from "vitest";
import { startFaultHarness, waitUntilStored, type FaultHarness } from "../fault/fault-support.js";
import { BACKLOG, NOISY, QUIET, QUIET_TIMERS, expectQuietTenantOnTime, scheduleEnvelope } from "./noisy-neighbour.js";

/**
 * Time to store the backlog before it falls due: ingesting 20,000 commands takes several seconds on
 * a loaded machine, and over 20 s on a slow host with other test files beside it (Postgres).
 */
const LEAD_MS = 45_000;
describe("fair firing across tenants", () => {
  let harness: FaultHarness | undefined;

  afterEach(async () => {
    await harness?.dispose();
    harness = undefined;
  });

  it("when one tenant's backlog falls due at one instant, then another tenant's timers due just after it fire within 1 s of their due time, and the backlog drains fully", async () => {
    harness = await startFaultHarness({ TIMER_POLLING_INTERVAL: "1000" });
    const { client, service } = harness;
    const burstAtMs = Date.now() + LEAD_MS;
    let next = 0;
    await Promise.all(
      Array.from({ length: 100 }, async () => {
        while (next < BACKLOG) {
          const i = next++;
          await client.publishRaw(`timer.commands.schedule.${NOISY}`, scheduleEnvelope(NOISY, `a-${i}`, burstAtMs));
        }
      }),
    );
    for (let i = 0; i < QUIET_TIMERS; i++) {
      await client.publishRaw(`timer.commands.schedule.${QUIET}`, scheduleEnvelope(QUIET, `b-${i}`, burstAtMs + 300 + i * 20));
    }
    await waitUntilStored(client, service, BACKLOG + 20, LEAD_MS + 10_000);
    expect(Date.now(), "stored before the burst falls due (raise the lead time if this fails)").toBeLessThan(burstAtMs);

    // The quiet tenant's timers fall due at the burst: the wait for them starts once the backlog is stored.
    await expectQuietTenantOnTime(client, burstAtMs, { quiet: LEAD_MS + 30_000, noisy: 60_000 });
  }, 180_000);
});
