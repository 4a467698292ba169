import { expect } from "vitest";
import type { ReceivedEvent, TimerClient } from "../support/timer-client.js";
import { waitUntil } from "../support/wait-for.js";

/**
 * The noisy-neighbour case of CONTRACT §12 shared by the fair-firing tests: tenant A (NOISY) has a
 * backlog due at one instant, tenant B (QUIET) 20 timers due just after it.
 */
export const NOISY = "noisy";
export const QUIET = "quiet";
export const BACKLOG = 20_000;
export const QUIET_TIMERS = 20;

let counter = 0;

/** A ScheduleTimer envelope with a fresh id. */
export function scheduleEnvelope(tenantId: string, serviceCallId: string, dueAtMs: number): string {
  return JSON.stringify({
    id: `fair-${process.pid}-${++counter}`,
    type: "ScheduleTimer",
    tenantId,
    timestampMs: Date.now(),
    payload: { tenantId, serviceCallId, dueAt: new Date(dueAtMs).toISOString() },
  });
}

export function dueOf(events: readonly ReceivedEvent[], tenantId: string): ReceivedEvent[] {
  return events.filter((e) => e.body.type === "DueTimeReached" && e.body.tenantId === tenantId);
}

/**
 * Waits for both tenants' events, then asserts the contract's bound: every quiet timer within 1 s
 * of its due time, the backlog fired once each, and B's last timer not behind A's last.
 */
export async function expectQuietTenantOnTime(
  client: TimerClient,
  burstAtMs: number,
  waitMs: { quiet: number; noisy: number },
): Promise<void> {
  await waitUntil(() => dueOf(client.events, QUIET).length === QUIET_TIMERS, waitMs.quiet, "the quiet tenant's timers");
  await waitUntil(() => dueOf(client.events, NOISY).length >= BACKLOG, waitMs.noisy, "the noisy tenant's backlog");

  const quiet = dueOf(client.events, QUIET);
  const quietLateness = quiet.map((e) => e.body.payload.lateMs as number);
  expect(Math.max(...quietLateness), `quiet tenant lateness ${JSON.stringify(quietLateness)}`).toBeLessThan(1_000);
  const noisy = dueOf(client.events, NOISY);
  expect(new Set(noisy.map((e) => e.body.payload.serviceCallId)).size).toBe(BACKLOG);
  // B's last timer came due 680 ms after the burst: it must not have waited for A's last.
  const lastNoisyMs = Math.max(...noisy.map((e) => e.receivedAtMs));
  const lastQuietMs = Math.max(...quiet.map((e) => e.receivedAtMs));
  if (lastNoisyMs - burstAtMs > 2_000) expect(lastQuietMs).toBeLessThan(lastNoisyMs);
}
