/**
 * SQLite's fair claim (one statement for every candidate's due range, the writer keeping each
 * tenant's earliest due time exact) against the memory store's model of the rule: any mix of
 * tenants and due times, some cancelled or moved later, claimed poll after poll; and a chain of
 * polls that reads after a cursor while its timers are not yet recorded.
 *
 * Reproduce a failure with FC_SEED=<seed in the describe name>.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MemoryTimerStore } from "../../src/adapters/memory/memory-timer-store.js";
import { openSqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import { advanceDueCursor } from "../../src/app/firing/fair-due-selection.js";
import type { DueCursor, DueTimer, TimerStore } from "../../src/app/timer-store.js";
import type { TimerCommand } from "../../src/domain/timer-command.js";
import { propertySeed } from "../support/property-seed.js";

const NOW = 1_000_000;
const seed = propertySeed();

const keysOf = (due: readonly DueTimer[]) => due.map((t) => `${t.tenantId}/${t.serviceCallId}`);

function reached(due: readonly DueTimer[]) {
  return due.map((t) => ({
    tenantId: t.tenantId,
    serviceCallId: t.serviceCallId,
    dueAtMs: t.dueAtMs,
    generation: t.generation,
    next: { state: "Reached" as const, dueAtMs: t.dueAtMs, occurrence: 1, reachedAtMs: NOW, commandTs: 2, updatedAtMs: NOW },
  }));
}

/** A tenant's timers: an age (ms before NOW; negative: not due yet) and what a second command does. */
const timerArb = fc.record({ age: fc.integer({ min: -20, max: 40 }), then: fc.constantFrom("keep", "keep", "cancel", "later") });

describe(`SQLite fair claim against the model (seed ${seed})`, () => {
  it("when tenants with any backlogs, cancels and moves are polled, with or without a chain's cursor, then SQLite claims what the model claims", async () => {
    const folder = mkdtempSync(join(tmpdir(), "fair-claim-property-"));
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.array(timerArb, { minLength: 1, maxLength: 25 }), { minLength: 1, maxLength: 8 }),
          fc.integer({ min: 1, max: 16 }),
          fc.integer({ min: 1, max: 4 }),
          async (backlogs, limit, chain) => {
            const sqlite = await openSqliteTimerStore({ path: join(folder, `${run++}.db`), writerThread: false });
            const memory = new MemoryTimerStore();
            const stores: TimerStore[] = [sqlite, memory];
            try {
              const base = { data: null, correlationId: null, repeat: null, maxLatenessMs: null };
              const first: TimerCommand[] = [];
              const second: TimerCommand[] = [];
              backlogs.forEach((timers, t) =>
                timers.forEach(({ age, then }, i) => {
                  const key = { tenantId: `t${t}`, serviceCallId: `c${String(i).padStart(2, "0")}` };
                  first.push({ kind: "schedule", ...key, ...base, dueAtMs: NOW - age, timestampMs: 1 });
                  if (then === "cancel") second.push({ kind: "cancel", ...key, correlationId: null, timestampMs: 2 });
                  if (then === "later") second.push({ kind: "schedule", ...key, ...base, dueAtMs: NOW - age + 30, timestampMs: 2 });
                }),
              );
              for (const store of stores) {
                await store.applyCommands(first, { nowMs: NOW });
                await store.applyCommands(second, { nowMs: NOW });
              }
              const claim = (store: TimerStore, after?: DueCursor) =>
                store.claimDue({ nowMs: NOW, limit, owner: "o", leaseUntilMs: NOW + 1, ...(after === undefined ? {} : { after }) });

              for (let poll = 0; poll < 200; poll++) {
                // A chain: polls that read after the timers the ones before took, none recorded yet.
                // Only with every due tenant a candidate do both stores pick the same candidates: SQLite
                // keeps a tenant whose due timers the chain holds as one.
                const dueTenants = new Set(
                  (await memory.claimDue({ nowMs: NOW, limit: 1_000, owner: "peek", leaseUntilMs: NOW })).map((t) => t.tenantId),
                );
                const links = dueTenants.size <= limit ? chain : 1;
                const taken: DueTimer[][] = [[], []];
                for (const [s, store] of stores.entries()) {
                  let cursor: DueCursor | undefined;
                  for (let link = 0; link < links; link++) {
                    const due = await claim(store, cursor);
                    taken[s]!.push(...due);
                    cursor = advanceDueCursor(cursor, due);
                  }
                }
                expect(keysOf(taken[0]!), `poll ${poll}`).toEqual(keysOf(taken[1]!));
                if (taken[0]!.length === 0) break;
                for (const [s, store] of stores.entries()) await store.recordFirings(reached(taken[s]!), "o");
              }
            } finally {
              await sqlite.close();
            }
          },
        ),
        { seed, numRuns: 60 },
      );
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
