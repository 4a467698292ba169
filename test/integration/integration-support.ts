import { expect } from "vitest";
import { jetstream, jetstreamManager, type JetStreamManager, type PubAck } from "@nats-io/jetstream";
import type { MsgHdrs } from "@nats-io/transport-node";
import type { ReceivedEvent, TimerClient } from "../support/timer-client.js";
import type { TimerServiceProcess } from "../support/timer-service-process.js";
import { scrapeMetrics as scrapeBaseUrl, series } from "../support/prometheus-metrics.js";
import { eventually } from "../support/wait-for.js";

/** Helpers shared by the integration tests: raw commands, metrics, barriers and polling waits. */

let counter = 0;

/** A serviceCallId (or tenant suffix) no other test uses. */
export function uniqueId(label: string): string {
  return `${label}-${process.pid}-${Date.now().toString(36)}-${++counter}`;
}

/** A ScheduleTimer envelope as JSON text; `overrides` replace (or, when undefined, delete) members. */
export function scheduleEnvelope(
  tenantId: string,
  serviceCallId: string,
  dueAt: string,
  overrides: Record<string, unknown> = {},
  payloadOverrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return withOverrides(
    {
      id: uniqueId("cmd"),
      type: "ScheduleTimer",
      tenantId,
      timestampMs: Date.now(),
      payload: withOverrides({ tenantId, serviceCallId, dueAt }, payloadOverrides),
    },
    overrides,
  );
}

/** A CancelTimer envelope; `overrides` as for `scheduleEnvelope`. */
export function cancelEnvelope(
  tenantId: string,
  serviceCallId: string,
  overrides: Record<string, unknown> = {},
  payloadOverrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return withOverrides(
    {
      id: uniqueId("cmd"),
      type: "CancelTimer",
      tenantId,
      timestampMs: Date.now(),
      payload: withOverrides({ tenantId, serviceCallId }, payloadOverrides),
    },
    overrides,
  );
}

function withOverrides(base: Record<string, unknown>, overrides: Record<string, unknown>): Record<string, unknown> {
  const result: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) delete result[key];
    else result[key] = value;
  }
  return result;
}

/** Publishes with JetStream and returns the stream's ack. */
export async function publishWithAck(
  client: TimerClient,
  subject: string,
  body: string | Uint8Array,
  msgID?: string,
  headers?: MsgHdrs,
): Promise<PubAck> {
  const data = typeof body === "string" ? new TextEncoder().encode(body) : body;
  return jetstream(client.connection).publish(subject, data, {
    ...(msgID === undefined ? {} : { msgID }),
    ...(headers === undefined ? {} : { headers }),
  });
}

export function manager(client: TimerClient): Promise<JetStreamManager> {
  return jetstreamManager(client.connection);
}

/** An ISO date-time `offsetMs` from now, UTC with milliseconds. */
export function fromNow(offsetMs: number): string {
  return new Date(Date.now() + offsetMs).toISOString();
}

/**
 * Schedules a timer due now and waits for its DueTimeReached. The consumer handles commands in
 * order and the worker fires oldest `dueAt` first, so once it arrives every earlier command was
 * handled and every earlier-due timer that was going to fire has fired.
 */
export async function barrier(client: TimerClient, tenantId = "barrier", dueAt = fromNow(0)): Promise<ReceivedEvent> {
  const serviceCallId = uniqueId("barrier");
  await client.schedule(tenantId, serviceCallId, dueAt);
  return client.waitForDue(tenantId, serviceCallId);
}

/** Every sample of the service's /metrics (labels sorted; see test/support/prometheus-metrics.ts). */
export function scrapeMetrics(service: TimerServiceProcess): Promise<Map<string, number>> {
  return scrapeBaseUrl(service.baseUrl);
}

export { series };

export function commandsSeries(type: string, outcome: string): string {
  return series("timer_commands_received_total", { type, outcome });
}

/** Value of a sample; 0 when the series is missing. */
export async function metricValue(service: TimerServiceProcess, key: string): Promise<number> {
  return (await scrapeMetrics(service)).get(key) ?? 0;
}

/** Differences between two scrapes, for the keys asked. */
export function deltas(before: Map<string, number>, after: Map<string, number>, keys: readonly string[]): Record<string, number> {
  return Object.fromEntries(keys.map((key) => [key, (after.get(key) ?? 0) - (before.get(key) ?? 0)]));
}

export { eventually };

/** Events of `type` received so far for one timer (tenant and serviceCallId). */
export function eventsFor(client: TimerClient, type: string, tenantId: string, serviceCallId: string): ReceivedEvent[] {
  return client.events.filter(
    (e) => e.body.type === type && e.body.tenantId === tenantId && e.body.payload?.serviceCallId === serviceCallId,
  );
}

/** Asserts that no DueTimeReached came for the given timers (call after a barrier). */
export function expectNeverFired(client: TimerClient, tenantId: string, ...serviceCallIds: string[]): void {
  for (const serviceCallId of serviceCallIds) {
    expect(eventsFor(client, "DueTimeReached", tenantId, serviceCallId), `${tenantId}/${serviceCallId} fired`).toEqual([]);
  }
}

export const UTC_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * Scrapes /metrics once every DueTimeReached the client received has also been counted as processed
 * (the worker marks and counts a timer after publishing it), so gauges such as pending are settled.
 * Valid while the client has been listening since the service started and the service was not restarted.
 */
export async function settledMetrics(service: TimerServiceProcess, client: TimerClient): Promise<Map<string, number>> {
  return eventually(async () => {
    const scrape = await scrapeMetrics(service);
    const fired = new Set(client.received("DueTimeReached").map((e) => e.body.id)).size;
    expect(scrape.get("timer_schedules_processed_total")).toBe(fired);
    return scrape;
  });
}
