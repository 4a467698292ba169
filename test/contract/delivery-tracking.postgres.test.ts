import { describe, expect, it } from "vitest";
import { CronerCalendar } from "../../src/adapters/cron/croner-calendar.js";
import { InProcessCatchUps } from "../support/fakes/in-process-catch-ups.js";
import { createPostgresPool } from "../../src/adapters/postgres/postgres-pool.js";
import { openPostgresTimerStore } from "../../src/adapters/postgres/postgres-timer-store.js";
import { PostgresTimerRetention } from "../../src/adapters/postgres/postgres-timer-retention.js";
import { CommandDecoder } from "../../src/app/commands/command-decoder.js";
import { TimerCommandProcessor } from "../../src/app/commands/timer-command-processor.js";
import { DueTimerPoll } from "../../src/app/firing/due-timer-poll.js";
import { formatInstant } from "../../src/domain/due-time.js";
import { FakeClock, T0 } from "../support/fakes/fake-clock.js";
import { rawCommand } from "../support/fakes/command-messages.js";
import { RecordingEventPublisher } from "../support/fakes/recording-event-publisher.js";
import { RecordingLogger } from "../support/fakes/recording-logger.js";
import { RecordingMetrics } from "../support/fakes/recording-metrics.js";
import { dropSchema, TEST_DATABASE_URL, uniqueSchema } from "../support/test-postgres.js";
import { describeCompletionTrackingContract } from "./delivery-tracking.contract.js";

describeCompletionTrackingContract("Postgres", async () => {
  const schema = uniqueSchema("delivery");
  const store = await openPostgresTimerStore({ url: TEST_DATABASE_URL, schema, maxConnections: 2 });
  const pool = createPostgresPool({ url: TEST_DATABASE_URL, schema, maxConnections: 1, timeoutMs: 5_000, onIdleError: () => {} });
  return {
    store,
    retention: new PostgresTimerRetention(pool),
    cleanup: async () => {
      await pool.end();
      await store.close();
      await dropSchema(schema);
    },
  };
});

describe("deadline claims across instances (Postgres, CONTRACT §6 and §11)", () => {
  it("when two instances claim passed deadlines at once, then each timer goes to one of them until its lease expires", async () => {
    const schema = uniqueSchema("deadline_claims");
    const a = await openPostgresTimerStore({ url: TEST_DATABASE_URL, schema, maxConnections: 2 });
    const b = await openPostgresTimerStore({ url: TEST_DATABASE_URL, schema, maxConnections: 2 });
    try {
      const clock = new FakeClock(T0);
      const publisher = new RecordingEventPublisher();
      const metrics = new RecordingMetrics();
      const calendar = new CronerCalendar();
      const decoder = new CommandDecoder({ subjectPrefix: "timer", maxHorizonDays: 365, maxClockSkewMs: 86_400_000, clock, calendar });
      const processor = new TimerCommandProcessor({
        decoder,
        store: a,
        publisher,
        clock,
        metrics,
        logger: new RecordingLogger(),
        onScheduled: () => undefined,
      });
      const messages = Array.from({ length: 40 }, (_, i) =>
        rawCommand("timer.commands.schedule.acme", {
          id: `s${i}`,
          type: "ScheduleTimer",
          tenantId: "acme",
          timestampMs: T0,
          payload: {
            tenantId: "acme",
            serviceCallId: `t${i}`,
            dueAt: formatInstant(T0),
            delivery: { maxRetries: 1, completionTimeoutMs: 1_000 },
          },
        }),
      );
      await processor.process(messages);
      const due = new DueTimerPoll({
        store: a,
        publisher,
        clock,
        metrics,
        logger: new RecordingLogger(),
        batchSize: 100,
        owner: "a",
        claimTtlMs: 30_000,
        calendar,
        catchUps: new InProcessCatchUps(calendar),
      });
      await due.poll();
      const nowMs = T0 + 1_000;
      const [byA, byB] = await Promise.all([
        a.claimDeadlines({ nowMs, limit: 25, owner: "a", leaseUntilMs: nowMs + 30_000 }),
        b.claimDeadlines({ nowMs, limit: 25, owner: "b", leaseUntilMs: nowMs + 30_000 }),
      ]);
      const keys = [...byA, ...byB].map((t) => t.serviceCallId);
      expect(keys.length).toBe(40);
      expect(new Set(keys).size).toBe(40);
      expect(await b.claimDeadlines({ nowMs: nowMs + 1, limit: 100, owner: "b", leaseUntilMs: nowMs + 30_000 })).toHaveLength(byB.length);
      // A record by the wrong owner while the lease holds changes nothing; after the lease it may.
      const record = (t: (typeof byA)[number], updatedAtMs: number) => ({
        tenantId: t.tenantId,
        serviceCallId: t.serviceCallId,
        attempt: t.attempt,
        deadlineAtMs: t.deadlineAtMs,
        next: {
          state: "Fired" as const,
          attempt: t.attempt,
          reachedAtMs: null,
          deadlineAtMs: updatedAtMs + 1_000,
          lastReason: "timeout",
          updatedAtMs,
        },
      });
      expect(await b.recordDeadlines([record(byA[0]!, nowMs + 2)], "b")).toEqual([]);
      expect(await b.recordDeadlines([record(byA[0]!, nowMs + 30_001)], "b")).toHaveLength(1);
      expect(await a.recordDeadlines([record(byA[0]!, nowMs + 30_002)], "a")).toEqual([]);
    } finally {
      await a.close();
      await b.close();
      await dropSchema(schema);
    }
  });
});
