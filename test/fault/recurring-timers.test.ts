/**
 * CONTRACT §10 against the real service (`node dist/main.js`) and a real nats-server: downtime of a
 * recurring timer, lateness at restart, a prefix cancel of 100,000 timers while others fire, and
 * kill -9 in the middle of recurring occurrences.
 */
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import type { ReceivedEvent } from "../support/timer-client.js";
import { TENANT, startFaultHarness, type FaultHarness } from "./fault-support.js";
import { waitUntil } from "../support/wait-for.js";
import { TEST_STORE } from "../support/test-postgres.js";
import { recountTallies } from "../../src/adapters/sqlite/batch-tallies.js";

let counter = 0;
const envelope = (type: string, payload: Record<string, unknown>, timestampMs = Date.now()) =>
  JSON.stringify({ id: `rec-${process.pid}-${++counter}`, type, tenantId: TENANT, timestampMs, payload: { tenantId: TENANT, ...payload } });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function eventsOf(events: readonly ReceivedEvent[], type: string, serviceCallId: string): ReceivedEvent[] {
  return events.filter((e) => e.body.type === type && e.body.payload?.serviceCallId === serviceCallId);
}

describe("recurring timers, lateness and prefix cancel against the real service", () => {
  let harness: FaultHarness | undefined;

  afterEach(async () => {
    await harness?.dispose();
    harness = undefined;
  });

  async function schedule(payload: Record<string, unknown>, timestampMs?: number): Promise<void> {
    await harness!.client.publishRaw(`timer.commands.schedule.${TENANT}`, envelope("ScheduleTimer", payload, timestampMs));
  }

  it("when a 1 s recurring timer's service is stopped for 10 s, then on restart one event stands for ≥ 8 missed occurrences and the series goes on on schedule", async () => {
    harness = await startFaultHarness({ TIMER_POLLING_INTERVAL: "1000" });
    const { client, service } = harness;
    const firstDueMs = Math.ceil((Date.now() + 1_500) / 1_000) * 1_000;
    await schedule({ serviceCallId: "tick", dueAt: new Date(firstDueMs).toISOString(), repeat: { everyMs: 1_000 } });
    await waitUntil(() => eventsOf(client.events, "DueTimeReached", "tick").length >= 2, 10_000, "two occurrences before the stop");

    await service.kill("SIGTERM");
    const beforeStop = eventsOf(client.events, "DueTimeReached", "tick").length;
    await sleep(10_000);
    await service.restart();
    await waitUntil(
      () => eventsOf(client.events, "DueTimeReached", "tick").length >= beforeStop + 4,
      15_000,
      "occurrences after the restart",
    );

    const after = eventsOf(client.events, "DueTimeReached", "tick")
      .slice(beforeStop)
      .map((e) => e.body.payload);
    expect(after[0].missedOccurrences).toBeGreaterThanOrEqual(8);
    const last = eventsOf(client.events, "DueTimeReached", "tick")[beforeStop - 1]!.body.payload;
    expect(after[0].occurrence).toBe(last.occurrence + after[0].missedOccurrences + 1);
    for (let i = 1; i < after.length; i++) {
      expect(after[i].occurrence, "one event per occurrence after the catch-up").toBe(after[i - 1].occurrence + 1);
      expect(Date.parse(after[i].dueAt) - Date.parse(after[i - 1].dueAt), "on the 1 s grid of the first dueAt").toBe(1_000);
      expect(after[i].missedOccurrences).toBeUndefined();
      expect(after[i].lateMs, "on schedule again").toBeLessThan(900);
    }
    expect((Date.parse(after[0].dueAt) - firstDueMs) % 1_000).toBe(0);
  }, 60_000);

  it("when a one-shot is overdue by more than maxLatenessMs at restart, then exactly one DueTimeMissed goes out and no DueTimeReached", async () => {
    harness = await startFaultHarness({ TIMER_POLLING_INTERVAL: "1000" });
    const { client, service } = harness;
    const dueAtMs = Date.now() + 2_000;
    await schedule({ serviceCallId: "late", dueAt: new Date(dueAtMs).toISOString(), maxLatenessMs: 500, data: { reminder: 1 } });
    await waitUntil(async () => (await service.metric("timer_schedules_pending")) === 1, 5_000, "timer stored");

    await service.kill("SIGTERM");
    await sleep(Math.max(0, dueAtMs + 1_500 - Date.now()));
    await service.restart();
    await waitUntil(() => eventsOf(client.events, "DueTimeMissed", "late").length > 0, 10_000, "DueTimeMissed");
    await sleep(1_500);

    const missed = eventsOf(client.events, "DueTimeMissed", "late");
    expect(missed).toHaveLength(1);
    expect(eventsOf(client.events, "DueTimeReached", "late")).toEqual([]);
    expect(missed[0]!.subject).toBe(`timer.events.missed.${TENANT}`);
    expect(missed[0]!.msgId).toBe(missed[0]!.body.id);
    expect(missed[0]!.body.payload).toMatchObject({ dueAt: new Date(dueAtMs).toISOString(), data: { reminder: 1 }, generation: 1 });
    expect(missed[0]!.body.payload.lateMs).toBeGreaterThan(500);
    expect(await service.metric("timer_schedules_missed_total")).toBe(1);
  }, 60_000);

  // Fills and inspects the SQLite file directly (100,000 rows in a second); the Postgres store's
  // prefix cancel is covered by the store contract suite.
  it.skipIf(TEST_STORE !== "sqlite")(
    "when 100,000 matching timers are cancelled by prefix, then unrelated timers keep firing on time, none of them fires, and a late older schedule stays cancelled",
    async () => {
      harness = await startFaultHarness({ TIMER_POLLING_INTERVAL: "1000" });
      const { client, service } = harness;
      await service.kill("SIGTERM");
      insertScheduled(service.env.TIMER_DB_PATH!, "order-4711:", 100_000, Date.now() + 120_000, 1_000);
      await service.restart();
      expect(await service.metric("timer_schedules_pending")).toBe(100_000);
      const beatDueMs = Math.ceil((Date.now() + 1_000) / 1_000) * 1_000;
      await schedule({ serviceCallId: "beat", dueAt: new Date(beatDueMs).toISOString(), repeat: { everyMs: 1_000 } });
      await waitUntil(() => eventsOf(client.events, "DueTimeReached", "beat").length >= 2, 10_000, "beat fires").catch((error: Error) => {
        throw new Error(`${error.message}; log: ${service.logLines.slice(-8).join("\n")}`);
      });

      const cancelTs = Date.now();
      const beatsBefore = eventsOf(client.events, "DueTimeReached", "beat").length;
      await client.publishRaw(
        `timer.commands.cancelprefix.${TENANT}`,
        envelope("CancelTimersByPrefix", { serviceCallIdPrefix: "order-4711:" }, cancelTs),
      );
      await waitUntil(async () => (await service.metric("timer_schedules_pending")) === 1, 60_000, "every matching timer cancelled");
      await sleep(1_000);

      const beatsDuring = eventsOf(client.events, "DueTimeReached", "beat")
        .slice(beatsBefore)
        .map((e) => e.body.payload);
      console.info(
        `prefix cancel of 100,000: ${beatsDuring.length} beats meanwhile, max lateMs ${Math.max(...beatsDuring.map((p) => p.lateMs))}`,
      );
      expect(beatsDuring.length).toBeGreaterThanOrEqual(2);
      for (const payload of beatsDuring) {
        expect(payload.missedOccurrences, "no beat skipped").toBeUndefined();
        expect(payload.lateMs, "the beat stays on time").toBeLessThan(1_000);
      }
      expect(await service.metric('timer_commands_received_total{type="CancelTimersByPrefix",outcome="accepted"}')).toBe(1);

      // A schedule for a matching key sent before the prefix cancel but arriving after it: ignored.
      await schedule({ serviceCallId: "order-4711:77", dueAt: new Date(Date.now() + 500).toISOString() }, cancelTs - 1);
      await schedule({ serviceCallId: "order-4711:78", dueAt: new Date(Date.now() + 500).toISOString() }, cancelTs + 1);
      await client.waitForDue(TENANT, "order-4711:78", 10_000);
      await sleep(1_000);
      expect(
        client.events
          .filter((e) => e.body.type === "DueTimeReached" && e.body.payload?.serviceCallId?.startsWith("order-4711:"))
          .map((e) => e.body.payload.serviceCallId),
      ).toEqual(["order-4711:78"]);

      await service.kill("SIGTERM");
      const db = new Database(service.env.TIMER_DB_PATH!, { readonly: true });
      try {
        const states = db
          .prepare("SELECT state, count(*) AS n FROM timer_schedules WHERE service_call_id LIKE 'order-4711:%' GROUP BY state")
          .all();
        // order-4711:78 was re-armed by its newer schedule and fired; every other one is Cancelled.
        expect(states).toEqual([
          { state: "Cancelled", n: 99_999 },
          { state: "Reached", n: 1 },
        ]);
        expect(
          db.prepare("SELECT state, command_ts AS commandTs FROM timer_schedules WHERE service_call_id = 'order-4711:77'").get(),
        ).toEqual({ state: "Cancelled", commandTs: cancelTs });
        expect(db.prepare("SELECT progress_key AS progressKey FROM timer_prefix_cancels").all()).toEqual([{ progressKey: null }]);
      } finally {
        db.close();
      }
    },
    180_000,
  );

  it("when the service is killed with SIGKILL in the middle of recurring occurrences, then no occurrence is lost and none is stored twice", async () => {
    harness = await startFaultHarness({ TIMER_BATCH_SIZE: "20", TIMER_POLLING_INTERVAL: "1000" });
    const { client, service, reader } = harness;
    const timers = 300;
    const firstDueMs = Math.ceil((Date.now() + 2_000) / 1_000) * 1_000;
    for (let i = 0; i < timers; i++)
      await schedule({ serviceCallId: `rec-${i}`, dueAt: new Date(firstDueMs).toISOString(), repeat: { everyMs: 2_000 } });
    await reader.waitUntil(() => reader.events.length >= timers * 2 + 50, 30_000, "two rounds and part of a third");

    await service.kill("SIGKILL");
    await sleep(1_500);
    await service.restart();
    const target = reader.events.length + timers * 3;
    await reader.waitUntil(() => reader.events.length >= target, 30_000, "three more rounds");
    await service.kill("SIGTERM");

    expect(reader.duplicates, "a republish after the kill is dropped by Nats-Msg-Id").toBe(0);
    const problems: string[] = [];
    for (let i = 0; i < timers; i++) {
      const events = reader.eventsOf(TENANT, `rec-${i}`);
      const covered = new Set<number>();
      for (const e of events) {
        const occurrence = e.occurrence ?? 0;
        if (covered.has(occurrence)) problems.push(`rec-${i}: occurrence ${occurrence} stored twice`);
        for (let k = occurrence - (e.missedOccurrences ?? 0); k <= occurrence; k++) covered.add(k);
      }
      const highest = Math.max(...covered);
      for (let k = 1; k <= highest; k++) if (!covered.has(k)) problems.push(`rec-${i}: occurrence ${k} lost`);
    }
    expect(problems.slice(0, 10)).toEqual([]);
    expect(client.received("DueTimeReached").length).toBeGreaterThan(0);
  }, 120_000);
});

/** Inserts `count` Scheduled one-shot timers `{prefix}{i}` straight into the (stopped) service's database. */
function insertScheduled(dbPath: string, prefix: string, count: number, dueAtMs: number, commandTs: number): void {
  const db = new Database(dbPath);
  try {
    const insert = db.prepare(`
      INSERT INTO timer_schedules (tenant_id, service_call_id, state, due_at, command_ts, generation, registered_at, updated_at)
      VALUES (?, ?, 'Scheduled', ?, ?, 1, ?, ?)`);
    const now = Date.now();
    db.transaction(() => {
      for (let i = 0; i < count; i++) insert.run(TENANT, `${prefix}${i}`, dueAtMs, commandTs, now, now);
      // Rows written around the store: its counts and due tenants are recounted.
      recountTallies(db);
    })();
  } finally {
    db.close();
  }
}
