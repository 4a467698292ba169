import type pg from "pg";
import { compareCodePoints } from "../../domain/code-point-order.js";
import { isScheduled, type Timer } from "../../domain/timer.js";
import { LOCK_DUE_TENANTS_SHARED, LOWER_DUE_TENANTS } from "./timer-schedules.sql.js";

/**
 * Keeps timer_due_tenants a lower bound of each tenant's earliest Scheduled due time (fair firing)
 * after `timers` were written in the transaction of `client`: a lower bound is always safe (a poll
 * raises it again), a missing one would leave a tenant unpolled. Tenants are locked in code-point
 * order, as every writer of the table does.
 */
export async function lowerDueTenants(client: pg.PoolClient, timers: Iterable<Timer>): Promise<void> {
  const earliest = new Map<string, number>();
  for (const timer of timers) {
    if (!isScheduled(timer)) continue;
    const seen = earliest.get(timer.tenantId);
    if (seen === undefined || timer.dueAtMs < seen) earliest.set(timer.tenantId, timer.dueAtMs);
  }
  if (earliest.size === 0) return;
  const tenants = [...earliest.keys()].sort(compareCodePoints);
  await client.query({ name: "timer-lock-due-tenants-shared", text: LOCK_DUE_TENANTS_SHARED, values: [tenants] });
  await client.query({
    name: "timer-lower-due-tenants",
    text: LOWER_DUE_TENANTS,
    values: [tenants, tenants.map((tenantId) => earliest.get(tenantId)!)],
  });
}
