import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CronerCalendar } from "../../src/adapters/cron/croner-calendar.js";
import { InProcessCatchUps } from "../support/fakes/in-process-catch-ups.js";
import { CommandDecoder } from "../../src/app/commands/command-decoder.js";
import { TimerCommandProcessor } from "../../src/app/commands/timer-command-processor.js";
import { DeliveryDeadlinePoll } from "../../src/app/firing/delivery-deadline-poll.js";
import { DueTimerPoll } from "../../src/app/firing/due-timer-poll.js";
import type { TimerRetention } from "../../src/app/retention/timer-retention.js";
import type { TimerStore } from "../../src/app/timer-store.js";
import { formatInstant } from "../../src/domain/due-time.js";
import { FakeClock, T0 } from "../support/fakes/fake-clock.js";
import { rawCommand } from "../support/fakes/command-messages.js";
import { RecordingEventPublisher } from "../support/fakes/recording-event-publisher.js";
import { RecordingLogger } from "../support/fakes/recording-logger.js";
import { RecordingMetrics } from "../support/fakes/recording-metrics.js";

/*
 * Completion tracking (CONTRACT §11) through the application on a fake clock, against every store:
 * decoder → processor → store → due worker → deadline worker → events and metrics. Wired for memory
 * and SQLite in delivery-tracking.test.ts, for Postgres in delivery-tracking.postgres.test.ts.
 */

/** A store under test with the retention over the same storage. */
export interface CompletionTrackingHarness {
  readonly store: TimerStore;
  readonly retention: TimerRetention;
  readonly cleanup: () => Promise<void>;
}

const DELIVERY = { maxRetries: 2, backoffMs: 1_000, completionTimeoutMs: 10_000 };

/** The completion tracking cases every store passes (CONTRACT §11). */
export function describeCompletionTrackingContract(name: string, open: () => Promise<CompletionTrackingHarness>): void {
  describe(`completion tracking on the ${name} store`, () => {
    let harness: CompletionTrackingHarness;
    let clock: FakeClock;
    let publisher: RecordingEventPublisher;
    let metrics: RecordingMetrics;
    let processor: TimerCommandProcessor;
    let dueWorker: DueTimerPoll;
    let deadlineWorker: DeliveryDeadlinePoll;
    let ts: number;

    beforeEach(async () => {
      harness = await open();
      clock = new FakeClock(T0);
      publisher = new RecordingEventPublisher();
      metrics = new RecordingMetrics();
      const logger = new RecordingLogger();
      const calendar = new CronerCalendar();
      const store = harness.store;
      processor = new TimerCommandProcessor({
        decoder: new CommandDecoder({ subjectPrefix: "timer", maxHorizonDays: 365, maxClockSkewMs: 86_400_000, clock, calendar }),
        store,
        publisher,
        clock,
        metrics,
        logger,
        onScheduled: () => undefined,
      });
      dueWorker = new DueTimerPoll({
        store,
        publisher,
        clock,
        metrics,
        logger,
        batchSize: 100,
        owner: "a",
        claimTtlMs: 30_000,
        calendar,
        catchUps: new InProcessCatchUps(calendar),
      });
      deadlineWorker = new DeliveryDeadlinePoll({
        store,
        publisher,
        clock,
        metrics,
        logger,
        batchSize: 100,
        owner: "a",
        claimTtlMs: 30_000,
      });
      ts = T0;
    });

    afterEach(async () => harness.cleanup());

    const send = async (kind: string, payload: Record<string, unknown>) => {
      const type = { schedule: "ScheduleTimer", complete: "TimerCompleted", fail: "TimerFailed" }[kind];
      const body = {
        id: `c${++ts}`,
        type,
        tenantId: "acme",
        timestampMs: Math.max(++ts, clock.now()),
        payload: { tenantId: "acme", ...payload },
      };
      return (await processor.process([rawCommand(`timer.commands.${kind}.acme`, body)]))[0];
    };
    const schedule = (serviceCallId: string, extra: Record<string, unknown> = {}) =>
      send("schedule", {
        serviceCallId,
        dueAt: formatInstant(T0 + 1_000),
        delivery: DELIVERY,
        createdBy: "alice",
        createdVia: "test",
        ...extra,
      });
    const get = (serviceCallId: string) => harness.store.get({ tenantId: "acme", serviceCallId });
    const attempts = (serviceCallId: string) =>
      publisher.dueTimeReached.filter((e) => e.serviceCallId === serviceCallId).map((e) => e.attempt);

    it("when the consumer completes the first publish, then the timer is Completed with its duration", async () => {
      await schedule("ok");
      clock.set(T0 + 1_000);
      await dueWorker.poll();
      expect(publisher.dueTimeReached[0]).toMatchObject({ serviceCallId: "ok", attempt: 1 });
      expect(await get("ok")).toMatchObject({
        state: "Fired",
        attempt: 1,
        firedAtMs: T0 + 1_000,
        deadlineAtMs: T0 + 11_000,
        createdBy: "alice",
        createdVia: "test",
      });
      clock.advance(2_500);
      await send("complete", { serviceCallId: "ok", result: "sent" });
      expect(await get("ok")).toMatchObject({ state: "Completed", completedAtMs: T0 + 3_500, result: "sent" });
      expect(metrics.deliveries.completed).toBe(1);
      expect(metrics.deliveryDurations).toEqual([2.5]);
      expect(metrics.count("TimerCompleted", "accepted")).toBe(1);
    });

    it("when the consumer fails twice then completes, then attempts 2 and 3 go out after backoff × 2^(attempt−1)", async () => {
      await schedule("flaky");
      clock.set(T0 + 1_000);
      await dueWorker.poll();
      await send("fail", { serviceCallId: "flaky", reason: "503" });
      expect(await get("flaky")).toMatchObject({ state: "Fired", lastReason: "503", deadlineAtMs: clock.now() + 1_000 });
      clock.advance(999);
      expect((await deadlineWorker.poll()).found).toBe(0);
      clock.advance(1);
      expect(await deadlineWorker.poll()).toMatchObject({ retried: 1 });
      await send("fail", { serviceCallId: "flaky", reason: "503 again" });
      clock.advance(1_999);
      expect((await deadlineWorker.poll()).found).toBe(0);
      clock.advance(1);
      await deadlineWorker.poll();
      expect(attempts("flaky")).toEqual([1, 2, 3]);
      await send("complete", { serviceCallId: "flaky" });
      expect(await get("flaky")).toMatchObject({ state: "Completed", attempt: 3 });
      expect(metrics.deliveries).toMatchObject({ retried: 2, completed: 1, failed: 0 });
    });

    it("when every attempt fails, then the timer ends Failed with the last reason", async () => {
      await schedule("broken");
      clock.set(T0 + 1_000);
      await dueWorker.poll();
      for (let i = 0; i < 2; i++) {
        await send("fail", { serviceCallId: "broken", reason: `no ${i}` });
        clock.advance(10_000);
        await deadlineWorker.poll();
      }
      await send("fail", { serviceCallId: "broken", reason: "gave up" });
      expect(await get("broken")).toMatchObject({ state: "Failed", lastReason: "gave up", attempt: 3 });
      expect(metrics.deliveries.failed).toBe(1);
      clock.advance(60_000);
      expect((await deadlineWorker.poll()).found).toBe(0);
    });

    it("when no report comes, then time-outs count as failures and the timer ends TimedOut after the retries", async () => {
      await schedule("silent");
      clock.set(T0 + 1_000);
      await dueWorker.poll();
      for (let i = 0; i < 40; i++) {
        clock.advance(1_000);
        await deadlineWorker.poll();
      }
      expect(attempts("silent")).toEqual([1, 2, 3]);
      expect(await get("silent")).toMatchObject({ state: "TimedOut", lastReason: "timeout", attempt: 3 });
      expect(metrics.deliveries).toMatchObject({ retried: 2, timed_out: 1 });
    });

    it("when a report names an unknown, Scheduled, untracked or final timer, then it is ignored", async () => {
      expect(await send("complete", { serviceCallId: "nobody" })).toEqual({ kind: "ack" });
      await schedule("later", { dueAt: formatInstant(T0 + 3_600_000) });
      await send("fail", { serviceCallId: "later", reason: "x" });
      await send("schedule", { serviceCallId: "plain", dueAt: formatInstant(T0) });
      await schedule("done");
      clock.set(T0 + 1_000);
      await dueWorker.poll();
      await send("complete", { serviceCallId: "plain" });
      await send("complete", { serviceCallId: "done" });
      await send("fail", { serviceCallId: "done", reason: "late" });
      expect(await get("nobody")).toBeUndefined();
      expect(await get("later")).toMatchObject({ state: "Scheduled" });
      expect(await get("plain")).toMatchObject({ state: "Reached" });
      expect(await get("done")).toMatchObject({ state: "Completed" });
      expect(metrics.count("TimerCompleted", "ignored")).toBe(2);
      expect(metrics.count("TimerFailed", "ignored")).toBe(2);
    });

    it("when a report overtakes the record of the first publish, then it is delivered again shortly and then applies", async () => {
      await schedule("fast");
      clock.set(T0 + 1_000);
      const type = "TimerCompleted";
      const report = (deliveryCount: number) =>
        rawCommand(
          "timer.commands.complete.acme",
          { id: "r1", type, tenantId: "acme", timestampMs: T0 + 1_000, payload: { tenantId: "acme", serviceCallId: "fast" } },
          { deliveryCount },
        );
      expect(await processor.process([report(1)])).toEqual([{ kind: "nak", delayMs: 200 }]);
      await dueWorker.poll();
      expect(await processor.process([report(2)])).toEqual([{ kind: "ack" }]);
      expect(await get("fast")).toMatchObject({ state: "Completed" });
      expect(metrics.count("TimerCompleted", "accepted")).toBe(1);
      expect(metrics.count("TimerCompleted", "ignored")).toBe(0);
    });

    it("when a report for a due, unrecorded timer keeps coming back, then after a few deliveries it counts as ignored", async () => {
      await schedule("stuck");
      clock.set(T0 + 1_000);
      const body = {
        id: "r2",
        type: "TimerFailed",
        tenantId: "acme",
        timestampMs: T0 + 1_000,
        payload: { tenantId: "acme", serviceCallId: "stuck", reason: "x" },
      };
      expect(await processor.process([rawCommand("timer.commands.fail.acme", body, { deliveryCount: 5 })])).toEqual([{ kind: "ack" }]);
      expect(metrics.count("TimerFailed", "ignored")).toBe(1);
    });

    it("when retention sweeps, then Completed, Failed and TimedOut timers go and Fired ones stay (CONTRACT §7)", async () => {
      const retention = harness.retention;
      for (const id of ["completed", "failed", "timedout", "fired"])
        await schedule(id, { delivery: { maxRetries: 0, backoffMs: 100, completionTimeoutMs: 1_000 } });
      clock.set(T0 + 1_000);
      await dueWorker.poll();
      await send("complete", { serviceCallId: "completed" });
      await send("fail", { serviceCallId: "failed", reason: "x" });
      clock.advance(1_000);
      await deadlineWorker.poll();
      expect(await get("timedout")).toMatchObject({ state: "TimedOut" });
      await schedule("fired", {}); // ignored: its event is out
      clock.advance(1); // "fired" timed out too; fire a fresh one to keep a Fired timer
      await schedule("still-fired", { dueAt: formatInstant(clock.now()), delivery: { maxRetries: 0, completionTimeoutMs: 3_600_000 } });
      await dueWorker.poll();
      expect(await get("still-fired")).toMatchObject({ state: "Fired" });
      expect(await retention.deleteFinalTimers(clock.now() + 1, 100)).toBe(4);
      expect(await get("completed")).toBeUndefined();
      expect(await get("failed")).toBeUndefined();
      expect(await get("timedout")).toBeUndefined();
      expect(await get("still-fired")).toMatchObject({ state: "Fired" });
    });

    it("when a retry's publish fails, then the retry stays waiting and goes out on the next poll", async () => {
      await schedule("retry");
      clock.set(T0 + 1_000);
      await dueWorker.poll();
      await send("fail", { serviceCallId: "retry", reason: "x" });
      clock.advance(1_000);
      publisher.failNext(1);
      expect(await deadlineWorker.poll()).toMatchObject({ retried: 0, publishFailed: 1 });
      await deadlineWorker.poll();
      expect(attempts("retry")).toEqual([1, 2]);
      expect(await get("retry")).toMatchObject({ state: "Fired", attempt: 2 });
    });
  });
}
