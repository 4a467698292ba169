import { beforeEach, describe, expect, it } from "vitest";
import { MemoryTimerStore } from "../../../src/adapters/memory/memory-timer-store.js";
import { CommandDecoder } from "../../../src/app/commands/command-decoder.js";
import {
  redeliveryDelayMs,
  TimerCommandProcessor,
  type CommandSettlement,
  type DeliveredCommand,
} from "../../../src/app/commands/timer-command-processor.js";
import type { TimerStore } from "../../../src/app/timer-store.js";
import type { DecideRules } from "../../../src/app/command-batch.js";
import type { TimerKey } from "../../../src/domain/timer.js";
import type { TimerCommand } from "../../../src/domain/timer-command.js";
import { FakeClock, T0 } from "../../support/fakes/fake-clock.js";
import { RecordingEventPublisher } from "../../support/fakes/recording-event-publisher.js";
import { RecordingLogger } from "../../support/fakes/recording-logger.js";
import { RecordingMetrics } from "../../support/fakes/recording-metrics.js";
import { DelegatingTimerStore } from "../../support/fakes/delegating-timer-store.js";
import { cancelEnvelope, cancelSubject, rawCommand, scheduleEnvelope, scheduleSubject } from "../../support/fakes/command-messages.js";
import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";

/** A store whose `applyCommands` fails (a transient storage fault) while `failing` is set. */
class FlakyTimerStore extends DelegatingTimerStore {
  failing = true;
  applyCalls = 0;
  override async applyCommands(commands: readonly TimerCommand[], rules: DecideRules) {
    this.applyCalls++;
    if (this.failing) throw new Error("SQLITE_BUSY: database is locked");
    return this.inner.applyCommands(commands, rules);
  }
}

/** A store that holds each `applyCommands` until `release` and logs when calls come and commit. */
class HeldTimerStore extends DelegatingTimerStore {
  readonly log: string[] = [];
  readonly #held: (() => void)[] = [];
  override async applyCommands(commands: readonly TimerCommand[], rules: DecideRules) {
    const name = commands.map((c) => (c.kind === "cancelPrefix" ? c.serviceCallIdPrefix : c.serviceCallId)).join();
    this.log.push(`call ${name}`);
    await new Promise<void>((resolve) => this.#held.push(resolve));
    const decisions = await this.inner.applyCommands(commands, rules);
    this.log.push(`commit ${name}`);
    return decisions;
  }
  /** Lets the oldest held call go on; resolves once it had the chance to commit. */
  async release(): Promise<void> {
    this.#held.shift()?.();
    await new Promise((resolve) => setImmediate(resolve));
  }
  async until(count: number): Promise<void> {
    for (let turns = 0; this.log.length < count; turns++) {
      if (turns === 1_000) throw new Error(`${this.log.length} calls and commits logged, not ${count}: ${this.log.join(", ")}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  /** Lets the first of two calls go on, then the second once it has come too. */
  async releaseTwo(): Promise<void> {
    await this.until(1);
    await this.release();
    await this.until(3);
    await this.release();
  }
}

const key = (serviceCallId: string, tenantId = "acme"): TimerKey => ({ tenantId, serviceCallId });

describe("TimerCommandProcessor", () => {
  let clock: FakeClock;
  let memory: MemoryTimerStore;
  let store: TimerStore;
  let publisher: RecordingEventPublisher;
  let metrics: RecordingMetrics;
  let logger: RecordingLogger;
  let scheduled: number[];

  const decoderOptions = () => ({
    subjectPrefix: "timer",
    maxHorizonDays: 3650,
    maxClockSkewMs: 86_400_000,
    clock,
    calendar: new CronerCalendar(),
  });
  const decoder = (): CommandDecoder => new CommandDecoder(decoderOptions());

  function processor(
    over: Partial<{ store: TimerStore; maxPendingPerTenant: number; decoder: CommandDecoder }> = {},
  ): TimerCommandProcessor {
    return new TimerCommandProcessor({
      decoder: over.decoder ?? decoder(),
      store: over.store ?? store,
      publisher,
      clock,
      metrics,
      logger,
      onScheduled: (dueAtMs) => scheduled.push(dueAtMs),
      maxPendingPerTenant: over.maxPendingPerTenant,
    });
  }

  const process = (...batch: DeliveredCommand[]): Promise<CommandSettlement[]> => processor().process(batch);

  beforeEach(() => {
    clock = new FakeClock(T0);
    memory = new MemoryTimerStore();
    store = memory;
    publisher = new RecordingEventPublisher();
    metrics = new RecordingMetrics();
    logger = new RecordingLogger();
    scheduled = [];
  });

  describe("valid commands", () => {
    it("when a valid ScheduleTimer arrives, then it is acked and the timer is stored Scheduled", async () => {
      const settlements = await process(
        rawCommand(scheduleSubject(), scheduleEnvelope({ dueAtMs: T0 + 5_000, data: { a: 1 }, correlationId: "r1", timestampMs: 10 })),
      );

      expect(settlements).toEqual([{ kind: "ack" }]);
      expect(await store.get(key("call-1"))).toMatchObject({
        state: "Scheduled",
        dueAtMs: T0 + 5_000,
        data: '{"a":1}',
        correlationId: "r1",
        commandTs: 10,
        registeredAtMs: T0,
      });
      expect(publisher.commandRejected).toEqual([]);
    });

    it("when a command is stored and acked, then its delivery count is not read (parsing the broker's delivery info costs)", async () => {
      let reads = 0;
      const message = rawCommand(scheduleSubject(), scheduleEnvelope({ dueAtMs: T0 + 5_000 }));
      const counted = Object.defineProperty({ ...message }, "deliveryCount", {
        get: () => {
          reads++;
          return 1;
        },
      });

      expect(await process(counted)).toEqual([{ kind: "ack" }]);
      expect(reads).toBe(0);
    });

    it("when a valid CancelTimer arrives for a Scheduled timer, then it is acked and the timer is Cancelled", async () => {
      await process(rawCommand(scheduleSubject(), scheduleEnvelope({ timestampMs: 1 })));
      const settlements = await process(rawCommand(cancelSubject(), cancelEnvelope({ timestampMs: 2 })));

      expect(settlements).toEqual([{ kind: "ack" }]);
      expect((await store.get(key("call-1")))?.state).toBe("Cancelled");
    });

    it("when a command is accepted, then the accepted metric counts it under its type", async () => {
      await process(rawCommand(scheduleSubject(), scheduleEnvelope({ timestampMs: 1 })));
      await process(rawCommand(cancelSubject(), cancelEnvelope({ timestampMs: 2 })));

      expect(metrics.handled).toEqual([
        { type: "ScheduleTimer", outcome: "accepted" },
        { type: "CancelTimer", outcome: "accepted" },
      ]);
    });

    it("when a command is redelivered, then it is acked again and counted as ignored", async () => {
      const message = rawCommand(scheduleSubject(), scheduleEnvelope({ timestampMs: 5 }));
      await process(message);
      const settlements = await process({ ...message, deliveryCount: 2 });

      expect(settlements).toEqual([{ kind: "ack" }]);
      expect(metrics.handled.map((h) => h.outcome)).toEqual(["accepted", "ignored"]);
    });

    it("when a stale schedule arrives after a cancel, then it is acked, ignored, and the timer stays Cancelled", async () => {
      await process(rawCommand(cancelSubject(), cancelEnvelope({ timestampMs: 10 })));
      const settlements = await process(rawCommand(scheduleSubject(), scheduleEnvelope({ timestampMs: 9 })));

      expect(settlements).toEqual([{ kind: "ack" }]);
      expect(metrics.count("ScheduleTimer", "ignored")).toBe(1);
      expect((await store.get(key("call-1")))?.state).toBe("Cancelled");
    });

    it("when timers are created, rescheduled and cancelled, then the pending gauge follows the number of Scheduled timers", async () => {
      await process(
        rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "a", timestampMs: 1 })),
        rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "b", timestampMs: 1 })),
        rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "c", timestampMs: 1 })),
      );
      expect(metrics.pending).toBe(3);

      await process(
        rawCommand(cancelSubject(), cancelEnvelope({ serviceCallId: "a", timestampMs: 2 })),
        rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "b", dueAtMs: T0 + 1, timestampMs: 2 })),
        rawCommand(cancelSubject(), cancelEnvelope({ serviceCallId: "unknown", timestampMs: 2 })),
      );
      expect(metrics.pending).toBe(2);
      expect(metrics.pendingDeltas).toEqual([3, -1]);
    });

    it("when a batch changes nothing Scheduled, then the pending gauge is not touched", async () => {
      await process(rawCommand(cancelSubject(), cancelEnvelope({ serviceCallId: "ghost" })));

      expect(metrics.pendingDeltas).toEqual([]);
    });

    it("when a batch schedules several timers, then onScheduled is told the earliest due time once", async () => {
      await process(
        rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "a", dueAtMs: T0 + 9_000 })),
        rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "b", dueAtMs: T0 + 2_000 })),
        rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "c", dueAtMs: T0 + 5_000 })),
      );

      expect(scheduled).toEqual([T0 + 2_000]);
    });

    it("when the earliest schedule of a batch is cancelled later in the same batch, then onScheduled is told the earliest timer still Scheduled", async () => {
      await process(
        rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "a", dueAtMs: T0 + 1_000, timestampMs: 1 })),
        rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "b", dueAtMs: T0 + 3_000, timestampMs: 1 })),
        rawCommand(cancelSubject(), cancelEnvelope({ serviceCallId: "a", timestampMs: 2 })),
      );

      expect(scheduled.length).toBe(1);
      expect(scheduled[0]).toBeLessThanOrEqual(T0 + 3_000);
      expect((await store.get(key("a")))?.state).toBe("Cancelled");
    });

    it("when a batch only cancels, then onScheduled is not called", async () => {
      await process(rawCommand(cancelSubject(), cancelEnvelope({ serviceCallId: "a" })));

      expect(scheduled).toEqual([]);
    });

    it("when a batch holds commands for one key in order, then each sees the effect of the one before", async () => {
      const settlements = await process(
        rawCommand(scheduleSubject(), scheduleEnvelope({ dueAtMs: T0 + 1, timestampMs: 1 })),
        rawCommand(scheduleSubject(), scheduleEnvelope({ dueAtMs: T0 + 2, timestampMs: 2 })),
        rawCommand(scheduleSubject(), scheduleEnvelope({ dueAtMs: T0 + 3, timestampMs: 1 })),
      );

      expect(settlements).toEqual([{ kind: "ack" }, { kind: "ack" }, { kind: "ack" }]);
      expect(await store.get(key("call-1"))).toMatchObject({ dueAtMs: T0 + 2, commandTs: 2 });
      expect(metrics.handled.map((h) => h.outcome)).toEqual(["accepted", "accepted", "ignored"]);
    });

    it("when the same serviceCallId is scheduled under two tenants, then there are two timers", async () => {
      await process(
        rawCommand(scheduleSubject("t1"), scheduleEnvelope({ tenantId: "t1", dueAtMs: T0 + 1 })),
        rawCommand(scheduleSubject("t2"), scheduleEnvelope({ tenantId: "t2", dueAtMs: T0 + 2 })),
        rawCommand(cancelSubject("t1"), cancelEnvelope({ tenantId: "t1", timestampMs: T0 + 1 })),
      );

      expect((await store.get(key("call-1", "t1")))?.state).toBe("Cancelled");
      expect(await store.get(key("call-1", "t2"))).toMatchObject({ state: "Scheduled", dueAtMs: T0 + 2 });
    });
  });

  describe("invalid commands", () => {
    it("when a command is invalid, then exactly one CommandRejected is published and the message is termed", async () => {
      const message = rawCommand(scheduleSubject(), scheduleEnvelope({ id: "cmd-x", dueAt: "tomorrow" }), { sourceId: "S:9" });

      const settlements = await process(message);

      expect(settlements).toHaveLength(1);
      expect(settlements[0]?.kind).toBe("term");
      expect(publisher.commandRejected).toHaveLength(1);
      expect(publisher.commandRejected[0]).toMatchObject({
        id: "rejected:S:9",
        tenant: "acme",
        code: "INVALID_FIELD",
        subject: "timer.commands.schedule.acme",
        commandId: "cmd-x",
        serviceCallId: "call-1",
      });
      expect(publisher.dueTimeReached).toEqual([]);
    });

    it("when a command is invalid, then the term reason names the code", async () => {
      const [settlement] = await process(rawCommand(scheduleSubject(), "{"));

      expect(settlement).toMatchObject({ kind: "term" });
      expect((settlement as { reason: string }).reason).toMatch(/^INVALID_JSON: /);
    });

    it("when a command is invalid, then nothing is stored and the pending gauge is untouched", async () => {
      await process(rawCommand(scheduleSubject("other"), scheduleEnvelope()));

      expect(await store.get(key("call-1"))).toBeUndefined();
      expect(await store.get(key("call-1", "other"))).toBeUndefined();
      expect(metrics.pendingDeltas).toEqual([]);
      expect(scheduled).toEqual([]);
    });

    it("when a command is invalid, then the rejected metric is incremented under the subject's command type", async () => {
      await process(
        rawCommand(scheduleSubject(), "{"),
        rawCommand(cancelSubject(), "[]"),
        rawCommand("timer.commands.pause.acme", scheduleEnvelope()),
      );

      expect(metrics.handled).toEqual(
        expect.arrayContaining([
          { type: "ScheduleTimer", outcome: "rejected" },
          { type: "CancelTimer", outcome: "rejected" },
          { type: "unknown", outcome: "rejected" },
        ]),
      );
      expect(metrics.handled).toHaveLength(3);
    });

    it("when a command is invalid, then a warn line names the subject and the code", async () => {
      await process(rawCommand(scheduleSubject(), scheduleEnvelope({ dueAtMs: T0 + 5_000 * 86_400_000 })));

      const warnings = logger.at("warn");
      expect(warnings).toHaveLength(1);
      expect(warnings[0]?.fields).toMatchObject({ subject: "timer.commands.schedule.acme", code: "DUE_TOO_FAR" });
      expect(logger.at("error")).toEqual([]);
    });

    it("when publishing the CommandRejected fails, then the message is nak'ed with a delay (not termed) and not counted", async () => {
      publisher.failNext(1, "rejected");

      const settlements = await process(rawCommand(scheduleSubject(), "{", { deliveryCount: 3 }));

      expect(settlements).toEqual([{ kind: "nak", delayMs: redeliveryDelayMs(3) }]);
      expect(settlements[0]).toMatchObject({ delayMs: expect.any(Number) });
      expect((settlements[0] as { delayMs: number }).delayMs).toBeGreaterThan(0);
      expect(metrics.count("ScheduleTimer", "rejected")).toBe(0);
      expect(logger.at("error")).toHaveLength(1);
    });

    it("when the rejection is redelivered after a failed publish, then it is published and termed", async () => {
      const message = rawCommand(scheduleSubject(), "{");
      publisher.failNext(1, "rejected");
      await process(message);

      const settlements = await process({ ...message, deliveryCount: 2 });

      expect(settlements[0]?.kind).toBe("term");
      expect(publisher.commandRejected).toHaveLength(1);
    });
  });

  describe("decoder faults", () => {
    it("when the decoder throws on a message, then that message is termed with one CommandRejected, an error is logged, and the rest of the batch is applied", async () => {
      const real = new CommandDecoder({
        subjectPrefix: "timer",
        maxHorizonDays: 3650,
        maxClockSkewMs: 86_400_000,
        clock,
        calendar: new CronerCalendar(),
      });
      const decoder = {
        decode: (raw: DeliveredCommand) => {
          if (raw.sourceId === "S:poison") throw new RangeError("Maximum call stack size exceeded");
          return real.decode(raw);
        },
      } as CommandDecoder;
      const withFaultyDecoder = new TimerCommandProcessor({ decoder, store, publisher, clock, metrics, logger, onScheduled: () => {} });

      const settlements = await withFaultyDecoder.process([
        rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "poison" }), { sourceId: "S:poison" }),
        rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "fine" })),
      ]);

      expect(settlements.map((s) => s.kind)).toEqual(["term", "ack"]);
      expect(publisher.commandRejected).toEqual([
        expect.objectContaining({ id: "rejected:S:poison", subject: "timer.commands.schedule.acme" }),
      ]);
      expect(logger.at("error")).toHaveLength(1);
      expect(await store.get(key("poison"))).toBeUndefined();
      expect((await store.get(key("fine")))?.state).toBe("Scheduled");
    });
  });

  describe("storage faults", () => {
    it("when storing fails, then every valid message is nak'ed with a delay and nothing is acked or stored", async () => {
      const flaky = new FlakyTimerStore(memory);
      const settlements = await processor({ store: flaky }).process([
        rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "a" }), { deliveryCount: 1 }),
        rawCommand(cancelSubject(), cancelEnvelope({ serviceCallId: "b" }), { deliveryCount: 1 }),
      ]);

      expect(settlements.map((s) => s.kind)).toEqual(["nak", "nak"]);
      expect(await memory.get(key("a"))).toBeUndefined();
      expect(await memory.get(key("b"))).toBeUndefined();
      expect(metrics.handled).toEqual([]);
      expect(metrics.pendingDeltas).toEqual([]);
      expect(scheduled).toEqual([]);
      expect(logger.at("error")).toHaveLength(1);
    });

    it("when storing keeps failing, then the nak delay grows with the delivery count (and is capped)", async () => {
      const flaky = new FlakyTimerStore(memory);
      const delays: number[] = [];
      for (const deliveryCount of [1, 2, 3, 4, 10, 100]) {
        const [settlement] = await processor({ store: flaky }).process([
          rawCommand(scheduleSubject(), scheduleEnvelope(), { deliveryCount }),
        ]);
        expect(settlement?.kind).toBe("nak");
        delays.push((settlement as { delayMs: number }).delayMs);
      }

      for (let i = 1; i < delays.length; i++) expect(delays[i]).toBeGreaterThanOrEqual(delays[i - 1]!);
      expect(delays[1]).toBeGreaterThan(delays[0]!);
      expect(delays[0]).toBeGreaterThan(0);
      expect(delays[delays.length - 1]).toBeLessThanOrEqual(60_000);
    });

    it("when storing fails and then recovers, then the redelivered command is applied and acked", async () => {
      const flaky = new FlakyTimerStore(memory);
      const message = rawCommand(scheduleSubject(), scheduleEnvelope());
      await processor({ store: flaky }).process([message]);
      flaky.failing = false;

      const settlements = await processor({ store: flaky }).process([{ ...message, deliveryCount: 2 }]);

      expect(settlements).toEqual([{ kind: "ack" }]);
      expect((await memory.get(key("call-1")))?.state).toBe("Scheduled");
      expect(metrics.pending).toBe(1);
    });

    it("when storing fails in a batch that also holds an invalid message, then the invalid one is still termed", async () => {
      const flaky = new FlakyTimerStore(memory);
      const settlements = await processor({ store: flaky }).process([
        rawCommand(scheduleSubject(), scheduleEnvelope()),
        rawCommand(scheduleSubject(), "not json"),
      ]);

      expect(settlements.map((s) => s.kind)).toEqual(["nak", "term"]);
      expect(publisher.commandRejected).toHaveLength(1);
    });
  });

  describe("mixed batches", () => {
    it("when a batch mixes valid and invalid messages, then each is settled by its own outcome, in batch order", async () => {
      const settlements = await process(
        rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "ok-1", dueAtMs: T0 + 10 })),
        rawCommand(scheduleSubject(), "{"),
        rawCommand(cancelSubject(), cancelEnvelope({ serviceCallId: "ok-2" })),
        rawCommand(cancelSubject("other"), cancelEnvelope({ serviceCallId: "bad" })),
        rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "ok-3", dueAtMs: T0 + 5 })),
      );

      expect(settlements.map((s) => s.kind)).toEqual(["ack", "term", "ack", "term", "ack"]);
      expect(publisher.commandRejected.map((r) => r.code).sort()).toEqual(["INVALID_JSON", "TENANT_MISMATCH"]);
      expect((await store.get(key("ok-1")))?.state).toBe("Scheduled");
      expect((await store.get(key("ok-2")))?.state).toBe("Cancelled");
      expect((await store.get(key("ok-3")))?.state).toBe("Scheduled");
      expect(await store.get(key("bad"))).toBeUndefined();
      expect(scheduled).toEqual([T0 + 5]);
      expect(metrics.count("ScheduleTimer", "accepted")).toBe(2);
      expect(metrics.count("CancelTimer", "accepted")).toBe(1);
      expect(metrics.count("ScheduleTimer", "rejected")).toBe(1);
      expect(metrics.count("CancelTimer", "rejected")).toBe(1);
    });

    it("when the batch is empty, then there is nothing to settle", async () => {
      expect(await process()).toEqual([]);
    });

    it("when only one rejection publish of a batch fails, then only that message is nak'ed", async () => {
      publisher.failFor("poison");
      const settlements = await process(
        rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "poison", dueAt: "x" })),
        rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "other", dueAt: "x" })),
      );

      expect(settlements.map((s) => s.kind)).toEqual(["nak", "term"]);
    });
  });

  describe("batches in flight", () => {
    const batch = (serviceCallId: string) => rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId, dueAtMs: T0 + 10 }));

    it("when two batches come, then the next batch is handed to the store before the last one committed", async () => {
      const held = new HeldTimerStore(memory);
      const commands = processor({ store: held });

      const first = commands.process([batch("a")]);
      const second = commands.process([batch("b")]);
      await held.until(2);
      expect(held.log).toEqual(["call a", "call b"]);
      await held.release();
      await held.release();

      expect(await first).toEqual([{ kind: "ack" }]);
      expect(await second).toEqual([{ kind: "ack" }]);
      expect(held.log).toEqual(["call a", "call b", "commit a", "commit b"]);
    });

    it("when a batch takes longer to decode than the one after it, then it is still applied first", async () => {
      // Decoding "slow" takes longer than a slice, so the processor yields in the middle of its batch.
      const slow = new (class extends CommandDecoder {
        override decode(raw: Parameters<CommandDecoder["decode"]>[0]) {
          const until = performance.now() + 8;
          if (new TextDecoder().decode(raw.body).includes('"slow')) while (performance.now() < until);
          return super.decode(raw);
        }
      })(decoderOptions());
      const held = new HeldTimerStore(memory);
      const commands = processor({ store: held, decoder: slow });

      const first = commands.process([batch("slow-1"), batch("slow-2"), batch("slow-3")]);
      const second = commands.process([batch("b")]);
      await held.releaseTwo();
      await Promise.all([first, second]);

      expect(held.log).toEqual(["call slow-1,slow-2,slow-3", "call b", "commit slow-1,slow-2,slow-3", "commit b"]);
    });

    it("when a batch's rejection cannot be published yet, then the next batch is applied meanwhile", async () => {
      const held = new HeldTimerStore(memory);
      const commands = processor({ store: held });
      publisher.hold();

      const first = commands.process([batch("a"), rawCommand(scheduleSubject(), "{not json")]);
      const second = commands.process([batch("b")]);
      await held.releaseTwo();
      await held.until(4);

      expect(held.log).toEqual(["call a", "call b", "commit a", "commit b"]);
      expect(await second).toEqual([{ kind: "ack" }]);
      publisher.release();
      expect((await first).map((s) => s.kind)).toEqual(["ack", "term"]);
    });

    it("when a batch has nothing to apply and its rejection cannot be published yet, then the next batch is applied meanwhile", async () => {
      const held = new HeldTimerStore(memory);
      const commands = processor({ store: held });
      publisher.hold();

      const first = commands.process([rawCommand(scheduleSubject(), "{not json")]);
      const second = commands.process([batch("b")]);
      await held.until(1);
      await held.release();

      expect(await second).toEqual([{ kind: "ack" }]);
      publisher.release();
      expect(await first).toEqual([{ kind: "term", reason: expect.stringContaining("INVALID_JSON") }]);
    });

    it("when a batch between two others has nothing to apply, then the third is still handed over after the first", async () => {
      const held = new HeldTimerStore(memory);
      const commands = processor({ store: held });

      const first = commands.process([batch("a")]);
      const second = commands.process([rawCommand(scheduleSubject(), "{not json")]);
      const third = commands.process([batch("c")]);
      await second;
      await held.releaseTwo();
      await Promise.all([first, third]);

      expect(held.log).toEqual(["call a", "call c", "commit a", "commit c"]);
    });

    it("when a pending quota is set, then the next batch is still handed over before the last commit (the store counts in its transaction)", async () => {
      const held = new HeldTimerStore(new MemoryTimerStore());
      const commands = processor({ store: held, maxPendingPerTenant: 100 });

      const first = commands.process([batch("a")]);
      const second = commands.process([batch("b")]);
      await held.releaseTwo();
      await Promise.all([first, second]);

      expect(held.log.slice(0, 2)).toEqual(["call a", "call b"]);
    });
  });
});
