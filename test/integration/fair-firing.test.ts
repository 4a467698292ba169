/**
 * Fair firing against the real service (CONTRACT §12), on the store of TEST_TIMER_STORE: while tenant
 * A drains a backlog due at one instant, tenant B's timers due just after it fire on time, not after
 * A's whole backlog. A's backlog is 20,000 here (the bench's noisyNeighbour runs 100,000); without
 * fairness B waited for all of it (about 2 s per 20,000 on this machine's kind).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ReceivedEvent } from "../support/timer-client.js";
import { startFaultHarness, waitUntilStored, type FaultHarness } from "../fault/fault-support.js";
import { waitUntil } from "../support/wait-for.js";

const NOISY = "noisy";
const QUIET = "quiet";
const BACKLOG = 20_000;
/** Time to store the backlog before it falls due: ingesting 20,000 commands takes several seconds on a loaded machine. */
const LEAD_MS = 20_000;
let counter = 0;

const envelope = (tenantId: string, serviceCallId: string, dueAtMs: number) =>
  JSON.stringify({
    id: `fair-${process.pid}-${++counter}`,
    type: "ScheduleTimer",
    tenantId,
    timestampMs: Date.now(),
    payload: { tenantId, serviceCallId, dueAt: new Date(dueAtMs).toISOString() },
  });

const dueOf = (events: readonly ReceivedEvent[], tenantId: string) =>
  events.filter((e) => e.body.type === "DueTimeReached" && e.body.tenantId === tenantId);

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
          await client.publishRaw(`timer.commands.schedule.${NOISY}`, envelope(NOISY, `a-${i}`, burstAtMs));
        }
      }),
    );
    for (let i = 0; i < 20; i++) {
      await client.publishRaw(`timer.commands.schedule.${QUIET}`, envelope(QUIET, `b-${i}`, burstAtMs + 300 + i * 20));
    }
    await waitUntilStored(client, service, BACKLOG + 20, LEAD_MS + 10_000);
    expect(Date.now(), "stored before the burst falls due (raise the lead time if this fails)").toBeLessThan(burstAtMs);

    await waitUntil(() => dueOf(client.events, QUIET).length === 20, 30_000, "the quiet tenant's 20 timers");
    await waitUntil(() => dueOf(client.events, NOISY).length >= BACKLOG, 60_000, "the noisy tenant's backlog");

    const quietLateness = dueOf(client.events, QUIET).map((e) => e.body.payload.lateMs as number);
    expect(Math.max(...quietLateness), `quiet tenant lateness ${JSON.stringify(quietLateness)}`).toBeLessThan(1_000);
    const noisy = dueOf(client.events, NOISY);
    expect(new Set(noisy.map((e) => e.body.payload.serviceCallId)).size).toBe(BACKLOG);
    // B's last timer came due 680 ms after the burst: it must not have waited for A's last.
    const lastNoisyMs = Math.max(...noisy.map((e) => e.receivedAtMs));
    const lastQuietMs = Math.max(...dueOf(client.events, QUIET).map((e) => e.receivedAtMs));
    if (lastNoisyMs - burstAtMs > 2_000) expect(lastQuietMs).toBeLessThan(lastNoisyMs);
  }, 120_000);
});
