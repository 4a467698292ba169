/** The pending quota (CONTRACT §12) in the command processor and its rule, on the memory and SQLite stores. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryTimerStore } from "../../../src/adapters/memory/memory-timer-store.js";
import { openSqliteTimerStore } from "../../../src/adapters/sqlite/sqlite-timer-store.js";
import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";
import { CommandDecoder } from "../../../src/app/commands/command-decoder.js";
import { TimerCommandProcessor, type DeliveredCommand } from "../../../src/app/commands/timer-command-processor.js";
import type { TimerStore } from "../../../src/app/timer-store.js";
import { withinPendingQuota, type CommandDecision } from "../../../src/domain/command-rules.js";
import type { Timer } from "../../../src/domain/timer.js";
import { FakeClock, T0 } from "../../support/fakes/fake-clock.js";
import { RecordingEventPublisher } from "../../support/fakes/recording-event-publisher.js";
import { RecordingLogger } from "../../support/fakes/recording-logger.js";
import { RecordingMetrics } from "../../support/fakes/recording-metrics.js";
import { cancelEnvelope, rawCommand, scheduleEnvelope } from "../../support/fakes/command-messages.js";

const scheduled = { state: "Scheduled" } as Timer;
const cancelled = { state: "Cancelled" } as Timer;

describe("withinPendingQuota", () => {
  const arming: CommandDecision = { outcome: "accepted", previous: undefined, next: scheduled };
  it("when a decision adds a Scheduled timer at the quota, then it is refused; below it, it passes", () => {
    expect(withinPendingQuota(arming, "acme", 3, 3)).toEqual({
      outcome: "refused",
      previous: undefined,
      code: "QUOTA_EXCEEDED",
      reason: "tenant acme has 3 Scheduled timers, its quota (TIMER_TENANT_MAX_PENDING)",
    });
    expect(withinPendingQuota(arming, "acme", 2, 3)).toBe(arming);
  });
  it("when a decision re-arms a Cancelled timer at the quota, then it is refused", () => {
    expect(withinPendingQuota({ outcome: "accepted", previous: cancelled, next: scheduled }, "acme", 5, 5).outcome).toBe("refused");
  });
  it("when a decision reschedules a Scheduled timer, cancels or changes nothing, or the quota is 0, then it passes at any count", () => {
    for (const decision of [
      { outcome: "accepted", previous: scheduled, next: scheduled },
      { outcome: "accepted", previous: scheduled, next: cancelled },
      { outcome: "ignored", previous: undefined },
    ] as CommandDecision[]) {
      expect(withinPendingQuota(decision, "acme", 99, 3)).toBe(decision);
    }
    expect(withinPendingQuota(arming, "acme", 99, 0)).toBe(arming);
  });
});

const STORES: [string, () => Promise<{ store: TimerStore; cleanup(): Promise<void> }>][] = [
  ["memory", async () => ({ store: new MemoryTimerStore(), async cleanup() {} })],
  [
    "SQLite",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "quota-"));
      const store = await openSqliteTimerStore({ path: join(dir, "t.db") });
      return {
        store,
        cleanup: async () => {
          await store.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  ],
];

describe.each(STORES)("TimerCommandProcessor with TIMER_TENANT_MAX_PENDING on the %s store", (_name, open) => {
  let opened: Awaited<ReturnType<typeof open>> | undefined;
  afterEach(async () => opened?.cleanup());

  async function setUp(maxPendingPerTenant: number) {
    opened = await open();
    const clock = new FakeClock(T0);
    const publisher = new RecordingEventPublisher();
    const metrics = new RecordingMetrics();
    const processor = new TimerCommandProcessor({
      decoder: new CommandDecoder({
        subjectPrefix: "timer",
        maxHorizonDays: 3650,
        maxClockSkewMs: 86_400_000,
        clock,
        calendar: new CronerCalendar(),
      }),
      store: opened.store,
      publisher,
      clock,
      metrics,
      logger: new RecordingLogger(),
      onScheduled: () => undefined,
      maxPendingPerTenant,
    });
    return { processor, publisher, metrics, store: opened.store };
  }
  const schedule = (serviceCallId: string, tenantId = "acme", timestampMs = 10): DeliveredCommand =>
    rawCommand(
      `timer.commands.schedule.${tenantId}`,
      scheduleEnvelope({
        tenantId,
        serviceCallId,
        dueAtMs: T0 + 60_000,
        timestampMs,
        id: `id-${tenantId}-${serviceCallId}-${timestampMs}`,
      }),
    );

  it("when one batch would take a tenant over its quota, then the commands past it are rejected QUOTA_EXCEEDED (termed) and the rest apply", async () => {
    const { processor, publisher, metrics, store } = await setUp(3);

    const settlements = await processor.process([
      schedule("a"),
      schedule("b"),
      schedule("a", "acme", 11),
      schedule("c"),
      schedule("d"),
      schedule("x", "other"),
    ]);

    expect(settlements.map((s) => s.kind)).toEqual(["ack", "ack", "ack", "ack", "term", "ack"]);
    expect(publisher.commandRejected.map((r) => [r.code, r.serviceCallId, r.commandId, r.tenant])).toEqual([
      ["QUOTA_EXCEEDED", "d", "id-acme-d-10", "acme"],
    ]);
    expect(metrics.rejectedCodes).toEqual(["QUOTA_EXCEEDED"]);
    expect(await store.get({ tenantId: "acme", serviceCallId: "d" })).toBeUndefined();
    expect(await store.countScheduledOf(["acme", "other"])).toEqual(
      new Map([
        ["acme", 3],
        ["other", 1],
      ]),
    );
  });

  it("when a cancel in the same batch makes room, then a later new timer of the batch fits", async () => {
    const { processor, store } = await setUp(2);
    await processor.process([schedule("a"), schedule("b")]);

    const settlements = await processor.process([
      rawCommand("timer.commands.cancel.acme", cancelEnvelope({ serviceCallId: "a", timestampMs: 20 })),
      schedule("c"),
      schedule("d"),
    ]);

    expect(settlements.map((s) => s.kind)).toEqual(["ack", "ack", "term"]);
    expect(await store.countScheduledOf(["acme"])).toEqual(new Map([["acme", 2]]));
  });
});
