import { describe, expect, it } from "vitest";
import { MemoryTimerStore } from "../../../src/adapters/memory/memory-timer-store.js";
import { CommandDecoder } from "../../../src/app/commands/command-decoder.js";
import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";
import { TimerCommandProcessor } from "../../../src/app/commands/timer-command-processor.js";
import { FakeClock, T0 } from "../../support/fakes/fake-clock.js";
import { RecordingEventPublisher } from "../../support/fakes/recording-event-publisher.js";
import { RecordingLogger } from "../../support/fakes/recording-logger.js";
import { RecordingMetrics } from "../../support/fakes/recording-metrics.js";
import { rawCommand, scheduleEnvelope, scheduleSubject } from "../../support/fakes/command-messages.js";

const HOUR = 3_600_000;

describe("the stale-command rule (CONTRACT §7)", () => {
  function setup(retentionMs: number) {
    const clock = new FakeClock(T0);
    const memory = new MemoryTimerStore();
    const store = memory;
    const metrics = new RecordingMetrics();
    const processor = new TimerCommandProcessor({
      decoder: new CommandDecoder({
        subjectPrefix: "timer",
        maxHorizonDays: 3650,
        maxClockSkewMs: 86_400_000,
        clock,
        calendar: new CronerCalendar(),
      }),
      store,
      publisher: new RecordingEventPublisher(),
      clock,
      metrics,
      logger: new RecordingLogger(),
      onScheduled: () => {},
      onPrefixCancelled: () => {},
      retentionMs,
    } as ConstructorParameters<typeof TimerCommandProcessor>[0]);
    return { processor, memory, store, metrics };
  }

  const command = (serviceCallId: string, timestampMs: number) => ({
    ...rawCommand(scheduleSubject("acme"), scheduleEnvelope({ serviceCallId, dueAt: new Date(T0 + HOUR).toISOString(), timestampMs })),
    deliveryCount: 1,
  });

  it("when a command is older than now − retention, then it is acked as ignored; newer ones in the batch apply", async () => {
    const { processor, memory, metrics } = setup(HOUR);
    const settlements = await processor.process([command("old", T0 - HOUR - 1), command("fresh", T0 - HOUR)]);
    expect(settlements.map((s) => s.kind)).toEqual(["ack", "ack"]);
    expect(await memory.get({ tenantId: "acme", serviceCallId: "old" })).toBeUndefined();
    expect((await memory.get({ tenantId: "acme", serviceCallId: "fresh" }))?.state).toBe("Scheduled");
    expect([metrics.count("ScheduleTimer", "ignored"), metrics.count("ScheduleTimer", "accepted")]).toEqual([1, 1]);
  });

  it("when retention is 0, then no command is too old", async () => {
    const { processor, memory } = setup(0);
    await processor.process([command("ancient", 1)]);
    expect((await memory.get({ tenantId: "acme", serviceCallId: "ancient" }))?.state).toBe("Scheduled");
  });
});
