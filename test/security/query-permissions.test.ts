import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/transport-node";
import type { TimerServiceProcess } from "../support/timer-service-process.js";
import { exportTenantPasswords, scheduleTimers, startTenantStack, startTimerService, until, type TenantStack } from "./tenant-stack.js";

// deploy/nats/tenant-accounts.conf as shipped: each tenant imports only its own timer.query.*.<tenant>.
let restore: () => void;
let stack: TenantStack;
let service: TimerServiceProcess;

beforeAll(async () => {
  restore = exportTenantPasswords();
  stack = await startTenantStack();
  service = await startTimerService(stack.server.url);
});

afterAll(async () => {
  await service?.dispose();
  await stack?.dispose();
  restore?.();
});

/** The reply, or the error the request failed with (permission violation, no responders, time-out). */
async function query(nc: NatsConnection, subject: string, body: unknown): Promise<{ ok: true; body: any } | { ok: false; error: string }> {
  try {
    const reply = await nc.request(subject, JSON.stringify(body), { timeout: 2_000 });
    return { ok: true, body: reply.json() };
  } catch (error) {
    return { ok: false, error: String(error) };
  }
}

describe("query isolation through broker permissions", () => {
  it("when acme queries its own subjects, then it gets its timers; globex's subjects are closed to it", async () => {
    await scheduleTimers(stack.acme, "acme", "acme-q", 1, 3_600_000);
    await scheduleTimers(stack.globex, "globex", "globex-q", 1, 3_600_000);
    await until("both timers stored", async () => {
      const [a, g] = await Promise.all([
        query(stack.acme, "timer.query.stats.acme", {}),
        query(stack.globex, "timer.query.stats.globex", {}),
      ]);
      return a.ok && a.body.scheduled === 1 && g.ok && g.body.scheduled === 1;
    });

    const own = await query(stack.acme, "timer.query.get.acme", { serviceCallId: "acme-q-1" });
    expect(own).toMatchObject({ ok: true, body: { timer: { tenantId: "acme", serviceCallId: "acme-q-1", state: "Scheduled" } } });
    expect(await query(stack.acme, "timer.query.list.acme", {})).toMatchObject({
      ok: true,
      body: { timers: [{ serviceCallId: "acme-q-1" }] },
    });

    for (const endpoint of ["get", "list", "stats"]) {
      const foreign = await query(stack.acme, `timer.query.${endpoint}.globex`, { serviceCallId: "globex-q-1" });
      expect(foreign.ok, `acme reached timer.query.${endpoint}.globex`).toBe(false);
    }
    // Wildcards and the discovery subjects do not cross the account boundary either.
    expect((await query(stack.acme, "timer.query.get.*", { serviceCallId: "globex-q-1" })).ok).toBe(false);
    expect((await query(stack.acme, "$SRV.INFO.timer-service", {})).ok).toBe(false);
  });
});
