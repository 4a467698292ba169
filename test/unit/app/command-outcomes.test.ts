import { beforeEach, describe, expect, it } from "vitest";
import { MemoryTimerStore } from "../../../src/adapters/memory/memory-timer-store.js";
import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";
import { CommandDecoder } from "../../../src/app/commands/command-decoder.js";
import type { CommandOutcome } from "../../../src/app/commands/command-outcomes.js";
import { TimerCommandProcessor, type DeliveredCommand } from "../../../src/app/commands/timer-command-processor.js";
import type { DecideRules } from "../../../src/app/command-batch.js";
import type { TimerCommand } from "../../../src/domain/timer-command.js";
import { FakeClock, T0 } from "../../support/fakes/fake-clock.js";
import { RecordingEventPublisher } from "../../support/fakes/recording-event-publisher.js";
import { RecordingLogger } from "../../support/fakes/recording-logger.js";
import { RecordingMetrics } from "../../support/fakes/recording-metrics.js";
import { DelegatingTimerStore } from "../../support/fakes/delegating-timer-store.js";
import { cancelEnvelope, cancelSubject, rawCommand, scheduleEnvelope, scheduleSubject } from "../../support/fakes/command-messages.js";

/** A store whose `applyCommands` fails (a transient storage fault) while `failing` is set. */
class FlakyTimerStore extends DelegatingTimerStore {
  failing = true;
  override async applyCommands(commands: readonly TimerCommand[], rules: DecideRules) {
    if (this.failing) throw new Error("SQLITE_BUSY: database is locked");
    return this.inner.applyCommands(commands, rules);
  }
}

/** CONTRACT §19 in the command processor: when an outcome is sent, and what reading the header costs. */
describe("TimerCommandProcessor outcomes (Timer-Confirm)", () => {
  let clock: FakeClock;
  let publisher: RecordingEventPublisher;
  let sent: CommandOutcome[];

  beforeEach(() => {
    clock = new FakeClock(T0);
    publisher = new RecordingEventPublisher();
    sent = [];
  });

  function processor(store = new MemoryTimerStore() as DelegatingTimerStore["inner"], withOutcomes = true): TimerCommandProcessor {
    return new TimerCommandProcessor({
      decoder: new CommandDecoder({
        subjectPrefix: "timer",
        maxHorizonDays: 3650,
        maxClockSkewMs: 86_400_000,
        clock,
        calendar: new CronerCalendar(),
      }),
      store,
      publisher,
      clock,
      metrics: new RecordingMetrics(),
      logger: new RecordingLogger(),
      onScheduled: () => undefined,
      ...(withOutcomes ? { outcomes: { send: (outcome: CommandOutcome) => void sent.push(outcome) } } : {}),
    });
  }

  /** `message` with its `confirm` and `deliveryCount` reads counted. */
  function counted(message: DeliveredCommand): { message: DeliveredCommand; reads: { confirm: number; deliveryCount: number } } {
    const reads = { confirm: 0, deliveryCount: 0 };
    const { confirm, deliveryCount } = message;
    const wrapped = Object.defineProperties(
      { ...message },
      {
        confirm: { get: () => (reads.confirm++, confirm) },
        deliveryCount: { get: () => (reads.deliveryCount++, deliveryCount) },
      },
    );
    return { message: wrapped, reads };
  }

  it("when a command with the header is stored, then one outcome follows the commit; the one without gets none", async () => {
    const confirmed = scheduleEnvelope({ id: "c-1", serviceCallId: "a", timestampMs: 10 });

    await processor().process([
      rawCommand(scheduleSubject(), confirmed, { confirm: true }),
      rawCommand(scheduleSubject(), scheduleEnvelope({ id: "c-2", serviceCallId: "b", timestampMs: 10 })),
    ]);

    expect(sent).toEqual([
      {
        tenantId: "acme",
        commandId: "c-1",
        serviceCallId: "a",
        outcome: "applied",
        reason: "timer created",
        timer: { state: "Scheduled", dueAtMs: T0 + 60_000, generation: 1 },
      },
    ]);
  });

  it("when a command without the header is stored, then only its header is read: not its delivery count", async () => {
    const { message, reads } = counted(rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "a" }), { confirm: false }));

    await processor().process([message]);

    expect(reads).toEqual({ confirm: 1, deliveryCount: 0 });
    expect(sent).toEqual([]);
  });

  it("when the service has no outcome port, then the header is not even read", async () => {
    const { message, reads } = counted(rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "a" }), { confirm: true }));

    await processor(new MemoryTimerStore(), false).process([message]);

    expect(reads.confirm).toBe(0);
  });

  it("when storage fails, then no outcome is sent; the redelivery that commits sends it", async () => {
    const flaky = new FlakyTimerStore(new MemoryTimerStore());
    const command = scheduleEnvelope({ id: "c-flaky", serviceCallId: "a" });
    const service = processor(flaky);

    expect(await service.process([rawCommand(scheduleSubject(), command, { confirm: true })])).toMatchObject([{ kind: "nak" }]);
    expect(sent).toEqual([]);
    flaky.failing = false;
    await service.process([rawCommand(scheduleSubject(), command, { confirm: true, deliveryCount: 2 })]);

    expect(sent).toMatchObject([{ commandId: "c-flaky", outcome: "applied" }]);
  });

  it("when the CommandRejected cannot be published, then no outcome is sent until a redelivery's rejection is out", async () => {
    const message = (deliveryCount: number) =>
      rawCommand(scheduleSubject(), "not json", { confirm: true, sourceId: "S:7:1", deliveryCount });
    publisher.failNext(1);

    expect(await processor().process([message(1)])).toMatchObject([{ kind: "nak" }]);
    expect(sent).toEqual([]);
    await processor().process([message(2)]);

    expect(sent).toEqual([
      { tenantId: "acme", commandId: "S:7:1", outcome: "rejected", code: "INVALID_JSON", reason: "message body is not UTF-8 JSON" },
    ]);
  });

  it("when a redelivered cancel meets the timer it already cancelled, then the outcome is ignored as a redelivery", async () => {
    const cancel = cancelEnvelope({ id: "c-cancel", serviceCallId: "a", timestampMs: 20 });
    const service = processor();
    await service.process([rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "a", timestampMs: 10 }))]);
    await service.process([rawCommand(cancelSubject(), cancel, { confirm: true })]);

    await service.process([rawCommand(cancelSubject(), cancel, { confirm: true, deliveryCount: 3 })]);

    expect(sent.map((o) => [o.outcome, o.reason])).toEqual([
      ["applied", "timer cancelled"],
      ["ignored", expect.stringMatching(/^redelivery \(delivery 3\)/)],
    ]);
  });

  it("when the same schedule is sent again with a newer timestampMs, then it is applied with nothing to change", async () => {
    const service = processor();
    await service.process([rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "a", timestampMs: 10 }))]);

    await service.process([rawCommand(scheduleSubject(), scheduleEnvelope({ serviceCallId: "a", timestampMs: 11 }), { confirm: true })]);

    expect(sent).toMatchObject([{ outcome: "applied", reason: "nothing to change: the timer already was Scheduled as the command asks" }]);
  });

  it("when a bare payload is confirmed, then its commandId is the stream message's id", async () => {
    await processor().process([
      rawCommand(
        scheduleSubject(),
        { tenantId: "acme", serviceCallId: "bare", dueAt: "2030-01-01T00:00:00Z" },
        { confirm: true, sourceId: "S:9:5" },
      ),
    ]);

    expect(sent).toMatchObject([{ commandId: "S:9:5", serviceCallId: "bare", outcome: "applied" }]);
  });
});
