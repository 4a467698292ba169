/**
 * Fair firing (CONTRACT §12) as a model: any mix of tenants and due times, claimed poll after poll
 * by the memory store (which implements the rule the SQL stores implement in SQL, and which the
 * store contract suite holds them to). Every poll takes each tenant's oldest due timers first, and a
 * tenant with due timers is served within a bounded number of polls however large the other
 * tenants' backlogs are: among at most `limit` tenants with due timers, every one gets a timer in
 * every poll.
 *
 * Reproduce a failure with FC_SEED=<seed printed by fast-check>.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MemoryTimerStore } from "../../src/adapters/memory/memory-timer-store.js";
import { dealRoundRobin } from "../../src/app/firing/fair-due-selection.js";
import type { ScheduleTimerCommand } from "../../src/domain/timer-command.js";

const NOW = 1_000_000;

const schedule = (tenantId: string, serviceCallId: string, dueAtMs: number): ScheduleTimerCommand => ({
  kind: "schedule",
  tenantId,
  serviceCallId,
  dueAtMs,
  data: null,
  correlationId: null,
  timestampMs: 1,
  repeat: null,
  maxLatenessMs: null,
});

describe("fair selection of due timers", () => {
  it("when tenants with any backlogs are polled, then every poll serves each tenant oldest first and no tenant with due timers waits while others are served", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 60 }), { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 1, max: 20 }),
        async (backlogs, limit) => {
          const store = new MemoryTimerStore();
          const commands = backlogs.flatMap((dues, t) =>
            dues.map((age, i) => schedule(`t${t}`, `c${String(i).padStart(3, "0")}`, NOW - age)),
          );
          await store.applyCommands(commands, { nowMs: NOW });
          const remaining = new Map(backlogs.map((dues, t) => [`t${t}`, dues.length]));

          for (let round = 0; round < 1_000 && [...remaining.values()].some((n) => n > 0); round++) {
            const due = await store.claimDue({ nowMs: NOW, limit, owner: "o", leaseUntilMs: NOW + 1 });
            const waiting = [...remaining].filter(([, n]) => n > 0).map(([tenant]) => tenant);
            expect(due.length).toBe(
              Math.min(
                limit,
                [...remaining.values()].reduce((a, b) => a + b, 0),
              ),
            );
            if (waiting.length <= limit) {
              expect(new Set(due.map((t) => t.tenantId)), "every waiting tenant is served").toEqual(new Set(waiting));
            }
            for (const tenantId of new Set(due.map((t) => t.tenantId))) {
              const mine = due.filter((t) => t.tenantId === tenantId);
              const stored = await Promise.all(
                backlogs[Number(tenantId.slice(1))]!.map(async (_, i) =>
                  store.get({ tenantId, serviceCallId: `c${String(i).padStart(3, "0")}` }),
                ),
              );
              const oldest = stored
                .filter((t) => t?.state === "Scheduled")
                .sort((a, b) => a!.dueAtMs! - b!.dueAtMs! || (a!.serviceCallId < b!.serviceCallId ? -1 : 1))
                .slice(0, mine.length)
                .map((t) => t!.serviceCallId);
              expect(
                mine.map((t) => t.serviceCallId),
                "oldest first",
              ).toEqual(oldest);
              remaining.set(tenantId, remaining.get(tenantId)! - mine.length);
            }
            await store.recordFirings(
              due.map((t) => ({
                tenantId: t.tenantId,
                serviceCallId: t.serviceCallId,
                dueAtMs: t.dueAtMs,
                generation: t.generation,
                next: { state: "Reached", dueAtMs: t.dueAtMs, occurrence: 1, reachedAtMs: NOW, commandTs: 1, updatedAtMs: NOW },
              })),
              "o",
            );
          }
          expect([...remaining.values()].every((n) => n === 0)).toBe(true);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("when lists are dealt, then every list's first comes before any list's second, and nothing beyond the limit", () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.nat(), { maxLength: 10 }), { maxLength: 10 }), fc.integer({ min: 0, max: 40 }), (lists, limit) => {
        const tagged = lists.map((list, l) => list.map((_, rank) => ({ l, rank })));
        const dealt = dealRoundRobin(tagged, limit);
        expect(dealt.length).toBe(
          Math.min(
            limit,
            lists.reduce((n, list) => n + list.length, 0),
          ),
        );
        for (let i = 1; i < dealt.length; i++) {
          const [a, b] = [dealt[i - 1]!, dealt[i]!];
          expect(a.rank < b.rank || (a.rank === b.rank && a.l < b.l)).toBe(true);
        }
      }),
    );
  });
});
