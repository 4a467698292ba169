import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient, type ReceivedEvent } from "../support/timer-client.js";
import { waitFor } from "../support/wait-for.js";
import { barrier, commandsSeries, deltas, eventually, fromNow, scheduleEnvelope, scrapeMetrics, uniqueId } from "./integration-support.js";

/**
 * CONTRACT §17: a newer ScheduleTimer for a timer closed to commands is rejected TIMER_FINAL; a
 * redelivered original and a cancel stay silent. Runs on SQLite, and on Postgres with
 * TEST_TIMER_STORE=postgres.
 */
const TENANT = "final17";
const TOKEN = "final-token-0123456789";
const SCHEDULE_REJECTED = commandsSeries("ScheduleTimer", "rejected");
const SCHEDULE_IGNORED = commandsSeries("ScheduleTimer", "ignored");
const CANCEL_IGNORED = commandsSeries("CancelTimer", "ignored");
const TIMER_FINAL = 'timer_commands_rejected_total{code="TIMER_FINAL"}';

describe("TIMER_FINAL (CONTRACT §17)", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;
  let client: TimerClient;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url, { TIMER_POLLING_INTERVAL: "200", TIMER_ADMIN_TOKEN: TOKEN });
    client = await TimerClient.connect(nats.url);
  });

  afterAll(async () => {
    await client?.close();
    await service?.dispose();
    await nats?.dispose();
  });

  const subject = `timer.commands.schedule.${TENANT}`;
  const publish = (envelope: Record<string, unknown>) => client.publishRaw(subject, JSON.stringify(envelope));

  async function stateOf(serviceCallId: string): Promise<string | undefined> {
    const response = await fetch(`${service.baseUrl}/v1/tenants/${TENANT}/timers/${encodeURIComponent(serviceCallId)}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    return response.status === 404 ? undefined : ((await response.json()) as { timer: { state: string } }).timer.state;
  }

  const untilState = (serviceCallId: string, state: string) =>
    waitFor(() => stateOf(serviceCallId), {
      until: (s) => s === state,
      timeoutMs: 30_000,
      everyMs: 100,
      what: `${serviceCallId} ${state}`,
    });

  const rejectionOf = (commandId: string): Promise<ReceivedEvent> =>
    client.waitFor((e) => e.body.type === "CommandRejected" && e.body.payload?.commandId === commandId);

  /** Sends a newer schedule of the closed timer and returns its rejection, checked for the members §17 names. */
  async function expectTimerFinal(serviceCallId: string, state: string, retryable: boolean): Promise<void> {
    const before = await scrapeMetrics(service);
    const newer = scheduleEnvelope(TENANT, serviceCallId, fromNow(0), { correlationId: "again" });
    await publish(newer);
    const rejection = await rejectionOf(newer.id as string);

    expect(rejection.subject).toBe(`timer.events.rejected.${TENANT}`);
    expect(rejection.body).toMatchObject({ correlationId: "again", payload: { code: "TIMER_FINAL", serviceCallId, subject } });
    const reason = rejection.body.payload.reason as string;
    expect(reason).toMatch(new RegExp(`is ${state} since \\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z`));
    expect(reason).toContain("a new serviceCallId");
    expect(reason.includes("RetryTimer")).toBe(retryable);
    expect(await stateOf(serviceCallId)).toBe(state);
    await eventually(async () =>
      expect(deltas(before, await scrapeMetrics(service), [SCHEDULE_REJECTED, TIMER_FINAL])).toEqual({
        [SCHEDULE_REJECTED]: 1,
        [TIMER_FINAL]: 1,
      }),
    );
  }

  it("when a Reached timer gets a newer schedule, then it is rejected TIMER_FINAL; the redelivered original and a cancel stay silent", async () => {
    const id = uniqueId("reached");
    const original = scheduleEnvelope(TENANT, id, fromNow(0));
    await publish(original);
    await client.waitForDue(TENANT, id);
    await untilState(id, "Reached");

    await expectTimerFinal(id, "Reached", false);

    const before = await scrapeMetrics(service);
    await publish(original);
    await client.cancel(TENANT, id);
    await barrier(client);
    // The barrier's own schedule is accepted: only the original and the cancel are ignored.
    expect(deltas(before, await scrapeMetrics(service), [SCHEDULE_IGNORED, CANCEL_IGNORED, SCHEDULE_REJECTED])).toEqual({
      [SCHEDULE_IGNORED]: 1,
      [CANCEL_IGNORED]: 1,
      [SCHEDULE_REJECTED]: 0,
    });
    expect(client.received("CommandRejected", id)).toHaveLength(1);
    expect(client.received("DueTimeReached", id)).toHaveLength(1);
  });

  it("when a Completed timer gets a newer schedule, then it is rejected TIMER_FINAL", async () => {
    const id = uniqueId("completed");
    await publish(scheduleEnvelope(TENANT, id, fromNow(0), {}, { delivery: { maxRetries: 0 } }));
    await client.waitForDue(TENANT, id);
    const complete = {
      id: uniqueId("done"),
      type: "TimerCompleted",
      tenantId: TENANT,
      timestampMs: Date.now(),
      payload: { tenantId: TENANT, serviceCallId: id },
    };
    await client.publishRaw(`timer.commands.complete.${TENANT}`, JSON.stringify(complete));
    await untilState(id, "Completed");

    await expectTimerFinal(id, "Completed", false);
  });

  it("when a Missed timer gets a newer schedule, then it is rejected TIMER_FINAL and names RetryTimer", async () => {
    const id = uniqueId("missed");
    await publish(scheduleEnvelope(TENANT, id, fromNow(-60_000), {}, { maxLatenessMs: 1000 }));
    await client.waitFor((e) => e.body.type === "DueTimeMissed" && e.body.payload?.serviceCallId === id);
    await untilState(id, "Missed");

    await expectTimerFinal(id, "Missed", true);
  });
});
