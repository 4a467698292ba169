/**
 * The pending quota against the real service (CONTRACT §12), on the store of TEST_TIMER_STORE:
 * TIMER_TENANT_MAX_PENDING=50 refuses a tenant's 51st Scheduled timer with QUOTA_EXCEEDED and
 * changes nothing; a reschedule, a cancel and other tenants pass; firing or cancelling makes room.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startFaultHarness, type FaultHarness } from "../fault/fault-support.js";
import { waitUntil } from "../support/wait-for.js";

const FULL = "full";
const OTHER = "roomy";
let counter = 0;

const command = (type: string, tenantId: string, payload: Record<string, unknown>, id = `quota-${process.pid}-${++counter}`) =>
  JSON.stringify({ id, type, tenantId, timestampMs: Date.now(), payload: { tenantId, ...payload } });

describe("pending quota per tenant", () => {
  let harness: FaultHarness | undefined;

  afterEach(async () => {
    await harness?.dispose();
    harness = undefined;
  });

  it("when a tenant holds its quota of Scheduled timers, then a new timer is rejected QUOTA_EXCEEDED and changes nothing, while reschedules, cancels and other tenants pass and firing or cancelling makes room", async () => {
    harness = await startFaultHarness({ TIMER_TENANT_MAX_PENDING: "50", TIMER_POLLING_INTERVAL: "1000" });
    const { client, service } = harness;
    const schedule = (tenantId: string, serviceCallId: string, dueAtMs: number, id?: string) =>
      client.publishRaw(
        `timer.commands.schedule.${tenantId}`,
        command("ScheduleTimer", tenantId, { serviceCallId, dueAt: new Date(dueAtMs).toISOString() }, id),
      );
    const later = Date.now() + 3_600_000;
    for (let i = 0; i < 49; i++) await schedule(FULL, `t-${i}`, later);
    const soonMs = Date.now() + 4_000;
    await schedule(FULL, "soon", soonMs);
    await waitUntil(async () => (await service.metric("timer_schedules_pending")) === 50, 10_000, "50 timers stored");

    await schedule(FULL, "one-too-many", later, "over-1");
    await waitUntil(() => client.events.some((e) => e.body.payload?.commandId === "over-1"), 10_000, "the rejection");
    const rejection = client.events.find((e) => e.body.payload?.commandId === "over-1")!;
    expect(rejection.subject).toBe(`timer.events.rejected.${FULL}`);
    expect(rejection.body.payload).toMatchObject({ code: "QUOTA_EXCEEDED", serviceCallId: "one-too-many" });
    expect(await service.metric('timer_commands_rejected_total{code="QUOTA_EXCEEDED"}')).toBe(1);
    expect(await service.metric('timer_commands_received_total{type="ScheduleTimer",outcome="rejected"}')).toBe(1);

    // A reschedule of a Scheduled timer, another tenant's timer and a cancel are never refused.
    await schedule(FULL, "t-0", later + 1_000, "resched-1");
    await schedule(OTHER, "elsewhere", later, "other-1");
    await waitUntil(async () => (await service.metric("timer_schedules_pending")) === 51, 10_000, "the other tenant's timer stored");
    await client.publishRaw(`timer.commands.cancel.${FULL}`, command("CancelTimer", FULL, { serviceCallId: "t-1" }));
    await waitUntil(async () => (await service.metric("timer_schedules_pending")) === 50, 10_000, "the cancel applied");
    expect(client.events.filter((e) => e.body.type === "CommandRejected")).toHaveLength(1);

    // The cancel made room for one.
    await schedule(FULL, "after-cancel", later, "room-1");
    await waitUntil(async () => (await service.metric("timer_schedules_pending")) === 51, 10_000, "a timer in the room the cancel made");
    await schedule(FULL, "over-again", later, "over-2");
    await waitUntil(() => client.events.some((e) => e.body.payload?.commandId === "over-2"), 10_000, "the second rejection");

    // Firing makes room too.
    await waitUntil(
      () => client.events.some((e) => e.body.type === "DueTimeReached" && e.body.payload?.serviceCallId === "soon"),
      15_000,
      "the soon timer fired",
    );
    await waitUntil(async () => (await service.metric("timer_schedules_pending")) === 50, 10_000, "the fired timer left the count");
    await schedule(FULL, "after-fire", later, "room-2");
    await waitUntil(async () => (await service.metric("timer_schedules_pending")) === 51, 10_000, "a timer in the room the firing made");
    expect(client.events.filter((e) => e.body.type === "CommandRejected").map((e) => e.body.payload.commandId)).toEqual([
      "over-1",
      "over-2",
    ]);
  }, 60_000);
});
