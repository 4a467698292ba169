/**
 * The claim path of fair firing in process, on a SQLite store: N tenants × K timers due at one
 * instant, claimed and recorded batch after batch as the worker does (no broker). Prints timers/s
 * and the time per claim and per record, against one tenant with the same number of timers.
 *
 *   npx tsx scripts/bench/fair-claim-micro.ts [--tenants 10000] [--per-tenant 10] [--batch 100] [--only many|one]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openSqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import { advanceDueCursor } from "../../src/app/firing/fair-due-selection.js";
import type { DueCursor, TimerStore } from "../../src/app/timer-store.js";

const { values } = parseArgs({
  options: { tenants: { type: "string" }, "per-tenant": { type: "string" }, batch: { type: "string" }, only: { type: "string" } },
});
const tenants = Number(values.tenants ?? 10_000);
const perTenant = Number(values["per-tenant"] ?? 10);
const batch = Number(values.batch ?? 100);
const NOW = Date.parse("2026-11-26T12:00:00Z");

async function drain(tenantCount: number, each: number): Promise<{ seconds: number; claimMs: number; recordMs: number }> {
  const dir = mkdtempSync(join(tmpdir(), "fair-claim-"));
  const store: TimerStore = await openSqliteTimerStore({ path: join(dir, "t.db"), synchronous: "NORMAL" });
  const commands = Array.from({ length: tenantCount * each }, (_, i) => ({
    kind: "schedule" as const,
    tenantId: `t-${i % tenantCount}`,
    serviceCallId: `c-${Math.floor(i / tenantCount)}`,
    dueAtMs: NOW - 1000,
    data: null,
    correlationId: null,
    timestampMs: 1,
    repeat: null,
    maxLatenessMs: null,
  }));
  for (let i = 0; i < commands.length; i += 5000) {
    await store.applyCommands(commands.slice(i, i + 5000), { nowMs: NOW });
  }
  let claimMs = 0;
  let recordMs = 0;
  const started = performance.now();
  let cursor: DueCursor | undefined;
  for (;;) {
    let t = performance.now();
    const due = await store.claimDue({
      nowMs: NOW,
      limit: batch,
      owner: "micro",
      leaseUntilMs: NOW + 30_000,
      ...(cursor ? { after: cursor } : {}),
    });
    claimMs += performance.now() - t;
    if (due.length === 0) {
      if (cursor === undefined) break;
      cursor = undefined;
      continue;
    }
    cursor = advanceDueCursor(cursor, due);
    t = performance.now();
    await store.recordFirings(
      due.map((d) => ({
        tenantId: d.tenantId,
        serviceCallId: d.serviceCallId,
        dueAtMs: d.dueAtMs,
        generation: d.generation,
        next: { state: "Reached", dueAtMs: d.dueAtMs, occurrence: 1, reachedAtMs: NOW, commandTs: 1, updatedAtMs: NOW },
      })),
      "micro",
    );
    recordMs += performance.now() - t;
  }
  const seconds = (performance.now() - started) / 1000;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return { seconds, claimMs, recordMs };
}

const total = tenants * perTenant;
const line = (label: string, r: Awaited<ReturnType<typeof drain>>) =>
  `${label}: ${Math.round(total / r.seconds)} timers/s, claims ${(r.claimMs / 1000).toFixed(2)} s, records ${(r.recordMs / 1000).toFixed(2)} s`;
const many = values.only === "one" ? undefined : await drain(tenants, perTenant);
if (many !== undefined) console.log(line(`${tenants} tenants × ${perTenant}`, many));
const one = values.only === "many" ? undefined : await drain(1, total);
if (one !== undefined) console.log(line(`1 tenant × ${total}`, one));
if (many !== undefined && one !== undefined) console.log(`ratio ${(one.seconds / many.seconds).toFixed(2)}`);
