import { describe, expect, it } from "vitest";
import { MemoryTimerStore } from "../../../src/adapters/memory/memory-timer-store.js";
import { PrefixCancelSweeper } from "../../../src/app/commands/prefix-cancel-sweeper.js";
import type { TimerCommand } from "../../../src/domain/timer-command.js";
import { FakeClock, T0 } from "../../support/fakes/fake-clock.js";
import { RecordingLogger } from "../../support/fakes/recording-logger.js";
import { RecordingMetrics } from "../../support/fakes/recording-metrics.js";

const schedule = (serviceCallId: string): TimerCommand => ({
  kind: "schedule",
  tenantId: "acme",
  serviceCallId,
  dueAtMs: T0 + 60_000,
  data: null,
  correlationId: null,
  timestampMs: 1,
});

describe("PrefixCancelSweeper", () => {
  it("when woken after a prefix cancel is recorded, then it cancels the matching timers in batches in the background, moves the gauge, logs, and stops promptly", async () => {
    const store = new MemoryTimerStore();
    const clock = new FakeClock(T0);
    const metrics = new RecordingMetrics();
    const logger = new RecordingLogger();
    const decide = { nowMs: clock.now() };
    await store.applyCommands([...["p:1", "p:2", "p:3", "p:4", "p:5", "q:1"].map(schedule)], decide);
    metrics.setPending(6);
    const sweeper = new PrefixCancelSweeper({ store, clock, metrics, logger, batchSize: 2, idleCheckMs: 60_000 });
    sweeper.start();

    await store.applyCommands(
      [{ kind: "cancelPrefix", tenantId: "acme", serviceCallIdPrefix: "p:", correlationId: null, timestampMs: 2 }],
      decide,
    );
    sweeper.wake();
    for (let i = 0; i < 100 && (await store.unfinishedPrefixCancels()).length > 0; i++) await new Promise((r) => setTimeout(r, 10));
    await sweeper.stop();

    expect(await store.unfinishedPrefixCancels()).toEqual([]);
    expect(metrics.pending).toBe(1);
    expect((await store.get({ tenantId: "acme", serviceCallId: "p:5" }))?.state).toBe("Cancelled");
    expect((await store.get({ tenantId: "acme", serviceCallId: "q:1" }))?.state).toBe("Scheduled");
    expect(logger.entries.some((e) => e.message === "prefix cancel applied to every matching timer")).toBe(true);
  });
});
