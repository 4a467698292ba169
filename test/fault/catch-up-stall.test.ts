/**
 * One command must not stall the service (CONTRACT §10, v3): a per-minute cron whose first dueAt is
 * in year 0 and an every-second timer from year 1 are caught up in one event each while another
 * tenant's timers fire on time and /healthz keeps answering; after kill -9 the service is healthy at
 * once. Also the hostile inputs of the same kind: `data` nested 8,000 levels deep, and a
 * `timestampMs` far ahead of the service's clock.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ReceivedEvent } from "../support/timer-client.js";
import { startFaultHarness, type FaultHarness } from "./fault-support.js";
import { waitUntil } from "../support/wait-for.js";

const HOSTILE = "hostile";
const OTHER = "bystander";
const ADMIN_TOKEN = "catch-up-test-admin-token";
let counter = 0;

const envelope = (tenantId: string, type: string, payload: Record<string, unknown>, timestampMs = Date.now()) =>
  JSON.stringify({ id: `stall-${process.pid}-${++counter}`, type, tenantId, timestampMs, payload: { tenantId, ...payload } });

function eventsOf(events: readonly ReceivedEvent[], tenantId: string, serviceCallId: string): ReceivedEvent[] {
  return events.filter(
    (e) => e.body.type === "DueTimeReached" && e.body.tenantId === tenantId && e.body.payload?.serviceCallId === serviceCallId,
  );
}

/** Asks /healthz every 50 ms until stopped; records the slowest answer and any failure (over 1 s counts as one). */
function probeHealth(baseUrl: string): { stop(): Promise<{ slowestMs: number; failures: number; probes: number }> } {
  let running = true;
  let slowestMs = 0;
  let failures = 0;
  let probes = 0;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      try {
        const response = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(1_000) });
        if (response.status !== 200) failures++;
      } catch {
        failures++;
      }
      probes++;
      slowestMs = Math.max(slowestMs, performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { slowestMs, failures, probes };
    },
  };
}

describe("a command cannot stall the service", () => {
  let harness: FaultHarness | undefined;

  afterEach(async () => {
    await harness?.dispose();
    harness = undefined;
  });

  it("when a year-0 per-minute cron and a year-1 every-second timer come due while another tenant's timers are due, then each is caught up in one event, the other tenant fires on time, /healthz answers throughout and a kill -9 restart is healthy at once", async () => {
    harness = await startFaultHarness({ TIMER_POLLING_INTERVAL: "1000" });
    const { client, service } = harness;
    const probe = probeHealth(service.baseUrl);

    const firstOtherDueMs = Date.now() + 1_500;
    for (let i = 0; i < 20; i++) {
      const dueAt = new Date(firstOtherDueMs + i * 100).toISOString();
      await client.publishRaw(`timer.commands.schedule.${OTHER}`, envelope(OTHER, "ScheduleTimer", { serviceCallId: `b-${i}`, dueAt }));
    }
    await client.publishRaw(
      `timer.commands.schedule.${HOSTILE}`,
      envelope(HOSTILE, "ScheduleTimer", { serviceCallId: "year-0-cron", dueAt: "0000-01-01T00:00:00Z", repeat: { cron: "* * * * *" } }),
    );
    await client.publishRaw(
      `timer.commands.schedule.${HOSTILE}`,
      envelope(HOSTILE, "ScheduleTimer", { serviceCallId: "year-1-every", dueAt: "0001-01-01T00:00:00Z", repeat: { everyMs: 1_000 } }),
    );

    await waitUntil(() => eventsOf(client.events, HOSTILE, "year-0-cron").length >= 1, 15_000, "the cron's catch-up event");
    await waitUntil(
      () => eventsOf(client.events, HOSTILE, "year-1-every").length >= 3,
      15_000,
      "the interval timer's catch-up and next occurrences",
    );
    await waitUntil(
      () => Array.from({ length: 20 }, (_, i) => eventsOf(client.events, OTHER, `b-${i}`).length).every((n) => n === 1),
      15_000,
      `the other tenant's 20 timers (${Array.from({ length: 20 }, (_, i) => eventsOf(client.events, OTHER, `b-${i}`).length).join(",")})`,
    );

    // Exactly one catch-up event; a minute boundary passed meanwhile adds a regular occurrence.
    const cron = eventsOf(client.events, HOSTILE, "year-0-cron").filter((e) => e.body.payload.missedOccurrences !== undefined);
    expect(cron).toHaveLength(1);
    expect(cron[0]!.body.payload).toMatchObject({ missedOccurrencesCapped: true });
    expect(cron[0]!.body.payload.missedOccurrences).toBeGreaterThan(1_000);
    expect(cron[0]!.body.payload.occurrence).toBe(cron[0]!.body.payload.missedOccurrences + 1);
    expect(cron[0]!.body.payload.lateMs, "the latest minute due").toBeLessThan(60_000 + 2_000);

    const every = eventsOf(client.events, HOSTILE, "year-1-every").map((e) => e.body.payload);
    const catchUps = every.filter((p) => p.missedOccurrences !== undefined);
    expect(catchUps, "exactly one catch-up event").toHaveLength(1);
    const catchUp = catchUps[0]!;
    expect(catchUp.missedOccurrencesCapped).toBeUndefined();
    const exactSkipped = (Date.parse(catchUp.dueAt) - Date.parse("0001-01-01T00:00:00Z")) / 1_000;
    expect(catchUp.missedOccurrences, "exact for everyMs").toBe(exactSkipped);
    expect(catchUp.occurrence).toBe(exactSkipped + 1);

    const otherLateness = Array.from({ length: 20 }, (_, i) => eventsOf(client.events, OTHER, `b-${i}`)[0]!.body.payload.lateMs as number);
    expect(Math.max(...otherLateness), "the other tenant fires on time").toBeLessThan(1_000);

    await service.kill("SIGKILL");
    const restartedAt = Date.now();
    await service.restart();
    expect(Date.now() - restartedAt, "ready at once after kill -9").toBeLessThan(15_000);
    const afterRestart = eventsOf(client.events, HOSTILE, "year-1-every").length;
    await waitUntil(
      () => eventsOf(client.events, HOSTILE, "year-1-every").length >= afterRestart + 2,
      10_000,
      "the interval timer goes on after the restart",
    );

    const health = await probe.stop();
    expect(health.probes).toBeGreaterThan(20);
    // The probe runs across the restart too: only the seconds while no process listened may fail.
    expect(health.slowestMs, "/healthz answered within 1 s").toBeLessThan(1_000);
  }, 90_000);

  it("when one tenant sends 100 weekly crons in a zone with DST due since year 1, then each is caught up in one event while another tenant's timers fire on time and /healthz answers", async () => {
    harness = await startFaultHarness({ TIMER_POLLING_INTERVAL: "1000" });
    const { client, service } = harness;
    const probe = probeHealth(service.baseUrl);

    // The other tenant's timers are stored first, due from 2 s on: the costly commands then arrive
    // and fall due at once, while the other tenant's timers fall due one by one.
    const firstOtherDueMs = Date.now() + 2_000;
    for (let i = 0; i < 20; i++) {
      const dueAt = new Date(firstOtherDueMs + i * 100).toISOString();
      await client.publishRaw(`timer.commands.schedule.${OTHER}`, envelope(OTHER, "ScheduleTimer", { serviceCallId: `b-${i}`, dueAt }));
    }

    const costly = Array.from({ length: 100 }, (_, i) => `santiago-${i}`);
    for (const serviceCallId of costly) {
      await client.publishRaw(
        `timer.commands.schedule.${HOSTILE}`,
        envelope(HOSTILE, "ScheduleTimer", {
          serviceCallId,
          dueAt: "0001-01-01T00:00:00Z",
          repeat: { cron: "30 2 * * 0", timezone: "America/Santiago" },
        }),
      );
    }
    await waitUntil(
      () => costly.every((id) => eventsOf(client.events, HOSTILE, id).length >= 1),
      60_000,
      `the 100 catch-ups (${costly.filter((id) => eventsOf(client.events, HOSTILE, id).length >= 1).length} so far)`,
    );
    await waitUntil(
      () => Array.from({ length: 20 }, (_, i) => eventsOf(client.events, OTHER, `b-${i}`).length).every((n) => n === 1),
      15_000,
      "the other tenant's 20 timers",
    );
    for (const id of costly) {
      const events = eventsOf(client.events, HOSTILE, id);
      expect(events, `${id}: one catch-up event`).toHaveLength(1);
      expect(events[0]!.body.payload).toMatchObject({ missedOccurrencesCapped: true });
      expect(events[0]!.body.payload.missedOccurrences).toBeGreaterThan(1_000);
    }
    const otherLateness = Array.from({ length: 20 }, (_, i) => eventsOf(client.events, OTHER, `b-${i}`)[0]!.body.payload.lateMs as number);
    expect(Math.max(...otherLateness), "the other tenant fires on time").toBeLessThan(1_000);
    const health = await probe.stop();
    expect(health.failures).toBe(0);
    expect(health.slowestMs, "/healthz answered within 1 s").toBeLessThan(1_000);
  }, 120_000);

  it("when data nests 8,000 levels deep, then the command is rejected INVALID_FIELD and queries over NATS and HTTP answer", async () => {
    harness = await startFaultHarness({ TIMER_ADMIN_TOKEN: ADMIN_TOKEN });
    const { client, service } = harness;
    const deep = `${"[".repeat(8_000)}${"]".repeat(8_000)}`;
    const body = `{"id":"deep-1","type":"ScheduleTimer","tenantId":"${HOSTILE}","timestampMs":${Date.now()},"payload":{"tenantId":"${HOSTILE}","serviceCallId":"deep","dueAt":"${new Date(Date.now() + 60_000).toISOString()}","data":${deep}}}`;
    await client.publishRaw(`timer.commands.schedule.${HOSTILE}`, body);
    await waitUntil(
      () => client.events.some((e) => e.body.type === "CommandRejected" && e.body.payload?.commandId === "deep-1"),
      10_000,
      "the rejection",
    );
    const rejection = client.events.find((e) => e.body.payload?.commandId === "deep-1")!;
    expect(rejection.body.payload).toMatchObject({ code: "INVALID_FIELD", serviceCallId: "deep" });

    const reply = await client.connection.request(`timer.query.get.${HOSTILE}`, JSON.stringify({ serviceCallId: "deep" }), {
      timeout: 5_000,
    });
    expect(reply.json()).toEqual({ timer: null });
    const http = await fetch(`${service.baseUrl}/v1/tenants/${HOSTILE}/timers/deep`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(http.status).toBe(404);
  }, 60_000);

  it("when a command's timestampMs is 2^53 − 1, then it is rejected INVALID_ENVELOPE and the key's later commands still apply", async () => {
    harness = await startFaultHarness({ TIMER_POLLING_INTERVAL: "1000" });
    const { client } = harness;
    const farDue = new Date(Date.now() + 3_600_000).toISOString();
    await client.publishRaw(
      `timer.commands.schedule.${HOSTILE}`,
      JSON.stringify({
        id: "pin-1",
        type: "ScheduleTimer",
        tenantId: HOSTILE,
        timestampMs: 2 ** 53 - 1,
        payload: { tenantId: HOSTILE, serviceCallId: "pinned", dueAt: farDue },
      }),
    );
    await waitUntil(() => client.events.some((e) => e.body.payload?.commandId === "pin-1"), 10_000, "the rejection");
    expect(client.events.find((e) => e.body.payload?.commandId === "pin-1")!.body.payload.code).toBe("INVALID_ENVELOPE");

    await client.publishRaw(
      `timer.commands.schedule.${HOSTILE}`,
      envelope(HOSTILE, "ScheduleTimer", { serviceCallId: "pinned", dueAt: new Date(Date.now() + 500).toISOString() }),
    );
    await waitUntil(() => eventsOf(client.events, HOSTILE, "pinned").length === 1, 10_000, "the timer fires as its owner scheduled it");
  }, 60_000);
});
