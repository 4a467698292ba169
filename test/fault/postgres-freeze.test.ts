import { afterEach, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient } from "../support/timer-client.js";
import { EventStreamReader } from "../support/event-stream-reader.js";
import { FreezeProxy } from "../support/freeze-proxy.js";
import { TEST_DATABASE_URL, uniqueSchema } from "../support/test-postgres.js";
import { TENANT, commandBacklog, earlyEvents, planTimers, scheduleAll } from "./fault-support.js";
import { waitUntil } from "../support/wait-for.js";

/**
 * CONTRACT §16: Postgres stops answering (a TCP relay that freezes: no RST, no FIN, the sockets stay
 * open). Every instance's /readyz is 503 with `storage: false` within 2 × TIMER_DATABASE_TIMEOUT_MS,
 * commands sent meanwhile are redelivered, not lost; after the thaw every instance is ready within
 * 10 s and every timer, due before, during or after the freeze, fires, none early.
 */

const TIMEOUT_MS = 2_000;
const FREEZE_MS = 8_000;
const PASSWORD = "never-logged-pw";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch((error: unknown) => console.error("cleanup failed", error));
});

async function readyz(service: TimerServiceProcess): Promise<{ status: number; storage: unknown }> {
  try {
    const response = await fetch(`${service.baseUrl}/readyz`, { signal: AbortSignal.timeout(1_000) });
    const body = (await response.json()) as { checks?: { storage?: unknown } };
    return { status: response.status, storage: body.checks?.storage };
  } catch {
    return { status: 0, storage: undefined };
  }
}

/** Polls until `service`'s /readyz answers `status` (and storage false for 503); returns ms since `sinceMs`. */
async function msUntilReadyz(service: TimerServiceProcess, status: number, sinceMs: number, timeoutMs: number): Promise<number> {
  for (;;) {
    const answer = await readyz(service);
    if (answer.status === status && (status === 200 || answer.storage === false)) return Date.now() - sinceMs;
    if (Date.now() - sinceMs > timeoutMs) throw new Error(`/readyz not ${status} within ${timeoutMs} ms: ${JSON.stringify(answer)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.each([1, 2])("Postgres frozen, %i instance(s)", (instances) => {
  it("when Postgres stops answering, then /readyz is 503 (storage false) within 2 × the time-out, commands wait, and after the thaw every instance is ready within 10 s and every timer fires", async () => {
    const nats = await NatsServerProcess.start();
    cleanups.push(() => nats.dispose());
    const proxy = await FreezeProxy.start(Number(new URL(TEST_DATABASE_URL).port || 5432));
    cleanups.push(() => proxy.close());
    const url = new URL(TEST_DATABASE_URL);
    url.port = String(proxy.port);
    url.password = PASSWORD; // trust auth ignores it; it must never reach a log line
    const schema = uniqueSchema("freeze");
    const env = {
      TIMER_STORE: "postgres",
      TIMER_DATABASE_URL: url.toString(),
      TIMER_DATABASE_SCHEMA: schema,
      TIMER_DATABASE_TIMEOUT_MS: String(TIMEOUT_MS),
      TIMER_POLLING_INTERVAL: "500",
      TIMER_CLAIM_TTL_MS: "3000",
    };
    const services: TimerServiceProcess[] = [];
    for (let i = 0; i < instances; i++) {
      const service = await TimerServiceProcess.start(nats.url, env);
      cleanups.push(() => service.dispose());
      services.push(service);
    }
    const client = await TimerClient.connect(nats.url);
    cleanups.push(() => client.close());
    const reader = await EventStreamReader.start(nats.url);
    cleanups.push(() => reader.close());

    const baseMs = Date.now();
    // Due while frozen (they wait), and after the thaw.
    const before = planTimers("before", 40, baseMs, FREEZE_MS / 2, FREEZE_MS + 4_000);
    await scheduleAll(client, before);
    await waitUntil(
      async () => (await commandBacklog(client)).ackPending + (await commandBacklog(client)).pending === 0,
      15_000,
      "commands stored",
    );
    expect(Date.now()).toBeLessThan(before[0]!.dueAtMs);

    const frozenAtMs = Date.now();
    proxy.freeze();
    // Commands sent while frozen: not stored now, redelivered until they are.
    const during = planTimers("during", 20, frozenAtMs, 500, FREEZE_MS + 2_000);
    await scheduleAll(client, during);
    const notReadyMs = await Promise.all(services.map((service) => msUntilReadyz(service, 503, frozenAtMs, 2 * TIMEOUT_MS + 3_000)));
    await waitUntil(() => Date.now() - frozenAtMs >= FREEZE_MS, FREEZE_MS + 1_000, "freeze lasts");
    for (const service of services) expect((await readyz(service)).status).toBe(503);
    expect(reader.events.filter((event) => event.tenantId === TENANT && event.storedAtMs > frozenAtMs + TIMEOUT_MS)).toHaveLength(0);

    const thawedAtMs = Date.now();
    proxy.thaw();
    const readyAgainMs = await Promise.all(services.map((service) => msUntilReadyz(service, 200, thawedAtMs, 15_000)));
    const all = [...before, ...during];
    await reader.waitForTimers(
      TENANT,
      all.map((timer) => timer.serviceCallId),
      30_000,
    );
    const firedAfterThawMs = Math.max(...all.map((t) => reader.eventsOf(TENANT, t.serviceCallId)[0]!.storedAtMs)) - thawedAtMs;
    console.info(
      `Postgres frozen ${FREEZE_MS} ms, ${instances} instance(s), TIMER_DATABASE_TIMEOUT_MS=${TIMEOUT_MS}: /readyz 503 after ${notReadyMs.join(", ")} ms; ready ${readyAgainMs.join(", ")} ms after the thaw; ${all.length} timers fired, the last ${firedAfterThawMs} ms after the thaw; ${reader.events.length} events`,
    );

    for (const ms of notReadyMs) expect(ms).toBeLessThanOrEqual(2 * TIMEOUT_MS);
    for (const ms of readyAgainMs) expect(ms).toBeLessThanOrEqual(10_000);
    expect(earlyEvents(reader.events)).toEqual([]);
    const logs = services.flatMap((service) => service.logLines);
    expect(logs.some((line) => line.includes("storage not writable"))).toBe(true);
    expect(logs.filter((line) => line.includes(PASSWORD))).toEqual([]);
    await waitUntil(
      async () => {
        const backlog = await commandBacklog(client);
        return backlog.pending + backlog.ackPending === 0;
      },
      10_000,
      "no command left unacked",
    );
  }, 120_000);
});
