/**
 * CONTRACT §10 through the application with an injected clock: commands decoded and applied by the
 * processor, polls of the worker, a memory store and the croner calendar. No test sleeps: the clock
 * is set to each instant of interest (DST days in 2026) and one poll runs there.
 */
import { dueTimerPollDeps } from "../../support/fakes/due-timer-poll-deps.js";
import { beforeEach, describe, expect, it } from "vitest";
import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";
import { MemoryTimerStore } from "../../../src/adapters/memory/memory-timer-store.js";
import { CommandDecoder } from "../../../src/app/commands/command-decoder.js";
import { PrefixCancelSweeper } from "../../../src/app/commands/prefix-cancel-sweeper.js";
import { TimerCommandProcessor } from "../../../src/app/commands/timer-command-processor.js";
import { DueTimerPoll } from "../../../src/app/firing/due-timer-poll.js";
import { rawCommand } from "../../support/fakes/command-messages.js";
import { FakeClock } from "../../support/fakes/fake-clock.js";
import { RecordingEventPublisher } from "../../support/fakes/recording-event-publisher.js";
import { silentLogger } from "../../support/fakes/recording-logger.js";
import { RecordingMetrics } from "../../support/fakes/recording-metrics.js";

const at = (iso: string) => Date.parse(iso);
const HOUR_MS = 3_600_000;

describe("recurring timers, lateness and prefix cancel (CONTRACT §10), with an injected clock", () => {
  let clock: FakeClock;
  let store: MemoryTimerStore;
  let publisher: RecordingEventPublisher;
  let metrics: RecordingMetrics;
  let processor: TimerCommandProcessor;
  let worker: DueTimerPoll;
  let sweeper: PrefixCancelSweeper;
  let ts: number;

  beforeEach(() => {
    clock = new FakeClock(at("2026-01-01T00:00:00Z"));
    store = new MemoryTimerStore();
    publisher = new RecordingEventPublisher();
    metrics = new RecordingMetrics();
    const calendar = new CronerCalendar();
    const decoder = new CommandDecoder({ subjectPrefix: "timer", maxHorizonDays: 3650, maxClockSkewMs: 86_400_000, clock, calendar });
    processor = new TimerCommandProcessor({ decoder, store, publisher, clock, metrics, logger: silentLogger, onScheduled: () => {} });
    worker = new DueTimerPoll(dueTimerPollDeps({ store, publisher, clock, metrics, logger: silentLogger, calendar }));
    sweeper = new PrefixCancelSweeper({ store, clock, metrics, logger: silentLogger, batchSize: 2, idleCheckMs: 1_000 });
    ts = 0;
  });

  async function send(kind: "schedule" | "cancel" | "cancelprefix", payload: Record<string, unknown>, timestampMs = ++ts): Promise<string> {
    const type = { schedule: "ScheduleTimer", cancel: "CancelTimer", cancelprefix: "CancelTimersByPrefix" }[kind];
    const body = { id: `m${timestampMs}`, type, tenantId: "acme", timestampMs, payload: { tenantId: "acme", ...payload } };
    const [settlement] = await processor.process([rawCommand(`timer.commands.${kind}.acme`, body)]);
    return settlement!.kind;
  }

  /** Sets the clock and polls once; returns the dueAt (ISO) of the events of this poll. */
  async function pollAt(iso: string): Promise<string[]> {
    clock.set(at(iso));
    const before = publisher.dueTimeReached.length;
    await worker.poll();
    return publisher.dueTimeReached.slice(before).map((e) => new Date(e.dueAtMs).toISOString());
  }

  /** Polls at each expected instant, and 1 ms before it (nothing fires early). */
  async function expectOccurrences(expected: readonly string[]): Promise<void> {
    for (const iso of expected) {
      expect(await pollAt(new Date(at(iso) - 1).toISOString()), `before ${iso}`).toEqual([]);
      expect(await pollAt(iso), `at ${iso}`).toEqual([iso]);
    }
  }

  describe("DST", () => {
    it("when a daily 02:30 Europe/Berlin timer crosses spring forward, then the nonexistent 02:30 fires once at 03:00 CEST and 02:30 comes back the next day", async () => {
      await send("schedule", {
        serviceCallId: "berlin",
        dueAt: "2026-03-27T00:00:00Z",
        repeat: { cron: "30 2 * * *", timezone: "Europe/Berlin" },
      });

      await expectOccurrences([
        "2026-03-27T01:30:00.000Z", // 02:30 CET
        "2026-03-28T01:30:00.000Z", // 02:30 CET
        "2026-03-29T01:00:00.000Z", // 02:30 does not exist: 03:00 CEST, the instant the clocks jump
        "2026-03-30T00:30:00.000Z", // 02:30 CEST
      ]);
      expect(publisher.dueTimeReached.map((e) => e.occurrence)).toEqual([1, 2, 3, 4]);
    });

    it("when a daily 02:30 Europe/Berlin timer crosses fall back, then the twice-existing 02:30 fires once, at its first instant", async () => {
      await send("schedule", {
        serviceCallId: "berlin",
        dueAt: "2026-10-24T00:00:00Z",
        repeat: { cron: "30 2 * * *", timezone: "Europe/Berlin" },
      });

      await expectOccurrences(["2026-10-24T00:30:00.000Z", "2026-10-25T00:30:00.000Z"]);
      expect(await pollAt("2026-10-25T01:30:00.000Z"), "the second 02:30 (CET)").toEqual([]);
      await expectOccurrences(["2026-10-26T01:30:00.000Z"]);
      expect(publisher.dueTimeReached).toHaveLength(3);
    });

    it("when a 09:00 America/New_York weekday timer crosses spring forward, then it stays 09:00 local (14:00Z, then 13:00Z) and skips the weekend", async () => {
      await send("schedule", {
        serviceCallId: "ny",
        dueAt: "2026-03-05T15:00:00Z",
        repeat: { cron: "0 9 * * MON-FRI", timezone: "America/New_York" },
      });

      await expectOccurrences(["2026-03-06T14:00:00.000Z", "2026-03-09T13:00:00.000Z", "2026-03-10T13:00:00.000Z"]);
    });

    it("when a 09:00 America/New_York weekday timer crosses fall back, then it stays 09:00 local (13:00Z, then 14:00Z)", async () => {
      await send("schedule", {
        serviceCallId: "ny",
        dueAt: "2026-10-29T12:00:00Z",
        repeat: { cron: "0 9 * * MON-FRI", timezone: "America/New_York" },
      });

      await expectOccurrences(["2026-10-29T13:00:00.000Z", "2026-10-30T13:00:00.000Z", "2026-11-02T14:00:00.000Z"]);
    });

    it("when an everyMs timer crosses a DST change, then it keeps absolute time: one hour is 3,600,000 ms", async () => {
      await send("schedule", { serviceCallId: "hourly", dueAt: "2026-03-29T00:00:00+01:00", repeat: { everyMs: HOUR_MS } });

      await expectOccurrences([
        "2026-03-28T23:00:00.000Z",
        "2026-03-29T00:00:00.000Z",
        "2026-03-29T01:00:00.000Z",
        "2026-03-29T02:00:00.000Z",
      ]);
    });
  });

  describe("series and catch-up", () => {
    it("when a 1 s timer was not polled for 10.5 s, then one event stands for the missed occurrences and the series continues on its grid", async () => {
      const first = "2026-01-01T00:00:01.000Z";
      await send("schedule", { serviceCallId: "tick", dueAt: first, repeat: { everyMs: 1_000 }, data: { n: 1 } });

      expect(await pollAt("2026-01-01T00:00:11.500Z")).toEqual(["2026-01-01T00:00:11.000Z"]);
      expect(publisher.dueTimeReached[0]).toMatchObject({ occurrence: 11, missedOccurrences: 10, data: '{"n":1}', generation: 1 });
      expect(await store.get({ tenantId: "acme", serviceCallId: "tick" })).toMatchObject({
        state: "Scheduled",
        dueAtMs: at("2026-01-01T00:00:12Z"),
        occurrence: 12,
      });
      await expectOccurrences(["2026-01-01T00:00:12.000Z"]);
      expect(publisher.dueTimeReached[1]).toMatchObject({ occurrence: 12 });
      expect(publisher.dueTimeReached[1]!.missedOccurrences).toBeUndefined();
    });

    it("when maxOccurrences is reached, then the timer ends Reached and the pending gauge drops", async () => {
      await send("schedule", { serviceCallId: "three", dueAt: "2026-01-01T00:01:00Z", repeat: { everyMs: 60_000, maxOccurrences: 3 } });
      expect(metrics.pending).toBe(1);

      await expectOccurrences(["2026-01-01T00:01:00.000Z", "2026-01-01T00:02:00.000Z", "2026-01-01T00:03:00.000Z"]);

      expect(await pollAt("2026-01-01T01:00:00Z")).toEqual([]);
      expect(await store.get({ tenantId: "acme", serviceCallId: "three" })).toMatchObject({ state: "Reached", occurrence: 3 });
      expect(metrics.pending).toBe(0);
    });

    it("when until is passed, then the last occurrence at or before it is the last event", async () => {
      await send("schedule", {
        serviceCallId: "until",
        dueAt: "2026-01-01T00:01:00Z",
        repeat: { everyMs: 60_000, until: "2026-01-01T00:02:30Z" },
      });

      await expectOccurrences(["2026-01-01T00:01:00.000Z", "2026-01-01T00:02:00.000Z"]);

      expect(await store.get({ tenantId: "acme", serviceCallId: "until" })).toMatchObject({ state: "Reached" });
    });

    it("when a cron timer's dueAt is between cron times, then the first occurrence is the next cron time", async () => {
      await send("schedule", { serviceCallId: "cron", dueAt: "2026-01-01T08:59:59.999Z", repeat: { cron: "0 9 * * *" } });

      expect(await store.get({ tenantId: "acme", serviceCallId: "cron" })).toMatchObject({ dueAtMs: at("2026-01-01T09:00:00Z") });
    });

    it("when the same recurring command is re-sent after the timer moved on, then nothing changes; a new rule is a new generation", async () => {
      const command = { serviceCallId: "re", dueAt: "2026-01-01T00:00:01Z", repeat: { everyMs: 1_000 } };
      await send("schedule", command, 1);
      await pollAt("2026-01-01T00:00:03Z");

      await send("schedule", command, 1);
      await send("schedule", command, 2);
      expect(await store.get({ tenantId: "acme", serviceCallId: "re" })).toMatchObject({ occurrence: 4, generation: 1, commandTs: 2 });

      await send("schedule", { ...command, maxLatenessMs: 500 }, 3);
      expect(await store.get({ tenantId: "acme", serviceCallId: "re" })).toMatchObject({
        occurrence: 4,
        generation: 1,
        maxLatenessMs: 500,
      });

      await send("schedule", { ...command, repeat: { everyMs: 2_000 } }, 4);
      expect(await store.get({ tenantId: "acme", serviceCallId: "re" })).toMatchObject({
        occurrence: 1,
        generation: 2,
        dueAtMs: at("2026-01-01T00:00:01Z"),
      });
    });
  });

  describe("lateness", () => {
    it("when a one-shot is polled later than maxLatenessMs after dueAt, then exactly one DueTimeMissed goes out, no DueTimeReached, and it ends Missed", async () => {
      await send("schedule", { serviceCallId: "late", dueAt: "2026-01-01T00:00:10Z", maxLatenessMs: 1_000, data: { a: 1 } });

      await pollAt("2026-01-01T00:00:11.001Z");
      await pollAt("2026-01-01T00:01:00Z");

      expect(publisher.dueTimeReached).toEqual([]);
      expect(publisher.dueTimeMissed).toEqual([
        {
          tenantId: "acme",
          serviceCallId: "late",
          dueAtMs: at("2026-01-01T00:00:10Z"),
          missedAtMs: at("2026-01-01T00:00:11.001Z"),
          generation: 1,
          data: '{"a":1}',
          correlationId: null,
          trace: expect.objectContaining({ traceId: expect.stringMatching(/^[0-9a-f]{32}$/) }),
        },
      ]);
      expect(await store.get({ tenantId: "acme", serviceCallId: "late" })).toMatchObject({ state: "Missed" });
      expect(metrics.missed).toBe(1);
      expect(metrics.pending).toBe(0);
    });

    it("when a one-shot is exactly maxLatenessMs late, then it is still reached", async () => {
      await send("schedule", { serviceCallId: "edge", dueAt: "2026-01-01T00:00:10Z", maxLatenessMs: 1_000 });

      expect(await pollAt("2026-01-01T00:00:11Z")).toEqual(["2026-01-01T00:00:10.000Z"]);
    });

    it("when an occurrence of a recurring timer is too late, then it is missed and the series moves on to the next one", async () => {
      await send("schedule", { serviceCallId: "rec", dueAt: "2026-01-01T00:01:00Z", repeat: { everyMs: 60_000 }, maxLatenessMs: 5_000 });

      await pollAt("2026-01-01T00:01:30Z");
      expect(publisher.dueTimeMissed.map((e) => e.occurrence)).toEqual([1]);
      expect(await store.get({ tenantId: "acme", serviceCallId: "rec" })).toMatchObject({ state: "Scheduled", occurrence: 2 });
      await expectOccurrences(["2026-01-01T00:02:00.000Z"]);
      expect(publisher.dueTimeReached[0]).toMatchObject({ occurrence: 2 });
    });
  });

  describe("prefix cancel", () => {
    it("when a prefix cancel is recorded, then matching timers never fire, even before the sweep reaches them; others do", async () => {
      for (const id of ["order-1:a", "order-1:b", "order-1:c", "order-2:a"])
        await send("schedule", { serviceCallId: id, dueAt: "2026-01-01T00:00:10Z" });
      expect(await send("cancelprefix", { serviceCallIdPrefix: "order-1:" })).toBe("ack");
      expect(metrics.count("CancelTimersByPrefix", "accepted")).toBe(1);

      expect(await pollAt("2026-01-01T00:00:10Z")).toEqual(["2026-01-01T00:00:10.000Z"]);
      expect(publisher.dueTimeReached.map((e) => e.serviceCallId)).toEqual(["order-2:a"]);
      expect(await store.get({ tenantId: "acme", serviceCallId: "order-1:b" })).toMatchObject({ state: "Cancelled" });
      expect(metrics.pending).toBe(0);

      await sweeper.sweepAll();
      expect(await store.unfinishedPrefixCancels()).toEqual([]);
    });

    it("when the sweep runs first, then matching timers are Cancelled in batches and the pending gauge follows", async () => {
      for (const id of ["p:1", "p:2", "p:3", "q:1"]) await send("schedule", { serviceCallId: id, dueAt: "2026-01-01T00:00:10Z" });
      await send("cancelprefix", { serviceCallIdPrefix: "p:" });

      expect(await sweeper.sweepAll()).toBe(3);

      expect(metrics.pending).toBe(1);
      expect(await pollAt("2026-01-01T00:00:10Z")).toHaveLength(1);
    });

    it("when an older schedule for a matching key arrives late, then it is ignored; a newer one re-arms the key", async () => {
      await send("cancelprefix", { serviceCallIdPrefix: "order-9:" }, 100);

      expect(await send("schedule", { serviceCallId: "order-9:x", dueAt: "2026-01-01T00:00:10Z" }, 99)).toBe("ack");
      expect(await send("schedule", { serviceCallId: "order-9:y", dueAt: "2026-01-01T00:00:10Z" }, 100)).toBe("ack");
      await send("schedule", { serviceCallId: "order-9:z", dueAt: "2026-01-01T00:00:10Z" }, 101);

      expect(await pollAt("2026-01-01T00:00:10Z")).toHaveLength(1);
      expect(publisher.dueTimeReached.map((e) => e.serviceCallId)).toEqual(["order-9:z"]);
      expect(metrics.count("ScheduleTimer", "ignored")).toBe(2);
    });
  });
});
