import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DecideCommand, DueCursor, DueTimer, TimerStore } from "../../src/app/timer-store.js";
import type { TimerKey } from "../../src/domain/timer.js";
import type { CancelTimerCommand, ScheduleTimerCommand, TimerCommand } from "../../src/domain/timer-command.js";
import { decideCommand } from "../../src/domain/timer-rules.js";

/** A store under test; `reopen` (durable stores only) opens the same storage again. */
export interface TimerStoreHarness {
  readonly store: TimerStore;
  readonly reopen?: () => Promise<TimerStore>;
  /**
   * Whether the store records claims (a store several instances share; memory as the reference).
   * A store only one instance can use may skip them; the claim cases then do not apply.
   */
  readonly recordsClaims: boolean;
  readonly cleanup: () => Promise<void>;
}

const NOW = 1_764_108_000_000;
const TENANT = "acme";
const OWNER = "instance-a";
const CLAIM_TTL_MS = 30_000;

const decideAt =
  (nowMs: number): DecideCommand =>
  (current, command) =>
    decideCommand(current, command, nowMs);

function schedule(
  serviceCallId: string,
  dueAtMs: number,
  fields: Partial<ScheduleTimerCommand> = {},
): ScheduleTimerCommand {
  const defaults = { tenantId: TENANT, data: null, correlationId: null, timestampMs: 1 };
  return { kind: "schedule", ...defaults, serviceCallId, dueAtMs, ...fields };
}

function cancel(serviceCallId: string, fields: Partial<CancelTimerCommand> = {}): CancelTimerCommand {
  return { kind: "cancel", tenantId: TENANT, serviceCallId, correlationId: null, timestampMs: 1, ...fields };
}

function keyOf({ tenantId, serviceCallId }: TimerKey): TimerKey {
  return { tenantId, serviceCallId };
}

/** Every adapter of `TimerStore` must pass this suite. */
export function describeTimerStoreContract(name: string, open: () => Promise<TimerStoreHarness>): void {
  describe(`${name} satisfies the TimerStore contract`, () => {
    let harness: TimerStoreHarness;
    let store: TimerStore;

    beforeEach(async () => {
      harness = await open();
      store = harness.store;
    });
    afterEach(async () => {
      await harness.cleanup();
    });

    const apply = (...commands: TimerCommand[]) => store.applyCommands(commands, decideAt(NOW));
    const key = (serviceCallId: string, tenantId = TENANT): TimerKey => ({ tenantId, serviceCallId });
    const claim = (nowMs: number, limit: number, after?: DueCursor, owner = OWNER): Promise<DueTimer[]> =>
      store.claimDue({ nowMs, limit, owner, leaseUntilMs: nowMs + CLAIM_TTL_MS, ...(after === undefined ? {} : { after }) });

    /** Fires the timers due at `nowMs` as the poller does: read, then mark. */
    async function fireDue(nowMs: number): Promise<TimerKey[]> {
      return store.markReached(await claim(nowMs, 1000), nowMs, OWNER);
    }

    describe("applyCommands", () => {
      it("when a ScheduleTimer names an unknown key, then a Scheduled timer is stored", async () => {
        const command = schedule("call-1", NOW + 60_000, { data: '{"a":1}', correlationId: "req-1", timestampMs: 7 });

        const decisions = await apply(command);


        expect(decisions.map((d) => d.outcome)).toEqual(["accepted"]);
        expect(await store.get(key("call-1"))).toEqual({
          tenantId: TENANT,
          serviceCallId: "call-1",
          state: "Scheduled",
          dueAtMs: NOW + 60_000,
          data: '{"a":1}',
          correlationId: "req-1",
          commandTs: 7,
          generation: 1,
          registeredAtMs: NOW,
          reachedAtMs: null,
          updatedAtMs: NOW,
        });
      });

      it("when a Scheduled timer is rescheduled, then dueAt, data and correlationId are replaced", async () => {
        await apply(schedule("call-1", NOW + 100, { data: '{"v":1}', correlationId: "req-1", timestampMs: 1 }));
        await store.applyCommands(
          [schedule("call-1", NOW + 200, { data: '{"v":2}', correlationId: null, timestampMs: 2 })],
          decideAt(NOW + 10),
        );

        expect(await store.get(key("call-1"))).toMatchObject({
          state: "Scheduled",
          dueAtMs: NOW + 200,
          data: '{"v":2}',
          correlationId: null,
          commandTs: 2,
          registeredAtMs: NOW,
          updatedAtMs: NOW + 10,
        });
        expect(await claim(NOW + 150, 10)).toEqual([]);
        expect((await claim(NOW + 200, 10)).map(keyOf)).toEqual([key("call-1")]);
      });

      it("when commands for one key come in one call, then each sees the effect of the ones before", async () => {
        const decisions = await apply(
          schedule("call-1", NOW, { timestampMs: 1 }),
          cancel("call-1", { timestampMs: 2 }),
          cancel("call-2", { timestampMs: 5 }),
          schedule("call-2", NOW, { timestampMs: 4 }),
        );

        expect(decisions.map((d) => d.outcome)).toEqual(["accepted", "accepted", "accepted", "ignored"]);
        expect(decisions[1]?.previous?.state).toBe("Scheduled");
        expect(decisions[3]?.previous?.state).toBe("Cancelled");
        expect(await store.get(key("call-1"))).toMatchObject({ state: "Cancelled", dueAtMs: NOW, commandTs: 2 });
        expect(await store.get(key("call-2"))).toMatchObject({ state: "Cancelled", dueAtMs: null, commandTs: 5 });
      });

      it("when decisions are returned, then they are in command order", async () => {
        const decisions = await apply(schedule("b", NOW), schedule("a", NOW), cancel("c"));

        expect(decisions.map((d) => d.next?.serviceCallId)).toEqual(["b", "a", "c"]);
      });

      it("when a decision is ignored without next, then nothing is written", async () => {
        await apply(schedule("call-1", NOW + 100, { timestampMs: 5 }));
        const before = await store.get(key("call-1"));

        const staleCommand = schedule("call-1", NOW + 999, { timestampMs: 3 });
        const stale = await store.applyCommands([staleCommand], decideAt(NOW + 50));
        const ignoreAll: DecideCommand = (current) => ({ outcome: "ignored", previous: current });
        await store.applyCommands([schedule("call-2", NOW)], ignoreAll);

        expect(stale[0]).toEqual({ outcome: "ignored", previous: before });
        expect(await store.get(key("call-1"))).toEqual(before);
        expect(await store.get(key("call-2"))).toBeUndefined();
      });

      it("when an ignored decision carries next, then next is stored", async () => {
        await apply(schedule("call-1", NOW + 100, { timestampMs: 5 }));
        await store.applyCommands([schedule("call-1", NOW + 100, { timestampMs: 9 })], decideAt(NOW + 50));

        expect(await store.get(key("call-1"))).toMatchObject({
          state: "Scheduled",
          commandTs: 9,
          updatedAtMs: NOW + 50,
        });
      });

      it("when a decision carries next, then exactly next is stored", async () => {
        await apply(schedule("call-1", NOW + 100, { data: "1", correlationId: "c" }));
        const next = {
          tenantId: TENANT,
          serviceCallId: "call-1",
          state: "Reached",
          dueAtMs: NOW + 1,
          data: "2",
          correlationId: "d",
          commandTs: 3,
          generation: 9,
          registeredAtMs: NOW + 4,
          reachedAtMs: NOW + 5,
          updatedAtMs: NOW + 6,
        } as const;
        const overwrite: DecideCommand = (current) => ({ outcome: "accepted", previous: current, next });

        await store.applyCommands([cancel("call-1")], overwrite);

        expect(await store.get(key("call-1"))).toEqual(next);
      });

      it("when decide throws midway, then the call fails and nothing of it is stored", async () => {
        await apply(schedule("existing", NOW + 100, { timestampMs: 1 }));
        const before = await store.get(key("existing"));
        const failure = new Error("decide failed");
        let calls = 0;
        const failOnThird: DecideCommand = (current, command) => {
          calls += 1;
          if (calls === 3) throw failure;
          return decideCommand(current, command, NOW);
        };

        const applying = store.applyCommands(
          [schedule("existing", NOW + 500, { timestampMs: 2 }), schedule("new", NOW), cancel("other")],
          failOnThird,
        );

        await expect(applying).rejects.toBe(failure);
        expect(await store.get(key("existing"))).toEqual(before);
        expect(await store.get(key("new"))).toBeUndefined();
        expect(await store.countScheduled()).toBe(1);
      });

      it("when the same serviceCallId is used by two tenants, then they are two timers", async () => {
        await apply(
          schedule("shared", NOW + 1, { tenantId: "acme" }),
          schedule("shared", NOW + 2, { tenantId: "globex" }),
        );
        await apply(cancel("shared", { tenantId: "acme", timestampMs: 2 }));

        expect(await store.get(key("shared", "acme"))).toMatchObject({ state: "Cancelled", dueAtMs: NOW + 1 });
        expect(await store.get(key("shared", "globex"))).toMatchObject({ state: "Scheduled", dueAtMs: NOW + 2 });
        expect((await claim(NOW + 10, 10)).map(keyOf)).toEqual([key("shared", "globex")]);
      });

      it("when a CancelTimer names an unknown key, then a tombstone without dueAt round trips", async () => {
        await apply(cancel("ghost", { timestampMs: 10 }));

        expect(await store.get(key("ghost"))).toEqual({
          tenantId: TENANT,
          serviceCallId: "ghost",
          state: "Cancelled",
          dueAtMs: null,
          data: null,
          correlationId: null,
          commandTs: 10,
          generation: 1,
          registeredAtMs: NOW,
          reachedAtMs: null,
          updatedAtMs: NOW,
        });
        expect(await claim(Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
        expect(await store.nextDueAt()).toBeNull();

        await apply(schedule("ghost", NOW, { timestampMs: 11 }));
        expect(await store.get(key("ghost"))).toMatchObject({ state: "Scheduled", dueAtMs: NOW });
      });
    });

    describe("claimDue", () => {
      it("when timers are due, then they come ordered by dueAt, then tenant, then serviceCallId", async () => {
        await apply(
          schedule("x", NOW - 10, { tenantId: "t-b" }),
          schedule("y", NOW - 10, { tenantId: "t-a" }),
          schedule("w", NOW - 5, { tenantId: "t-a" }),
          schedule("x", NOW - 10, { tenantId: "t-a" }),
          schedule("z", NOW - 20, { tenantId: "t-b" }),
        );

        const due = await claim(NOW, 10);

        expect(due.map((t) => `${t.dueAtMs - NOW}/${t.tenantId}/${t.serviceCallId}`)).toEqual([
          "-20/t-b/z",
          "-10/t-a/x",
          "-10/t-a/y",
          "-10/t-b/x",
          "-5/t-a/w",
        ]);
      });

      it("when serviceCallIds hold astral and high BMP characters, then they are ordered by code point", async () => {
        const ids = ["😀", "\uFFFD", "z", "\uE000", "é", "😀a"];
        await apply(...ids.map((id) => schedule(id, NOW)));

        const due = await claim(NOW, 10);

        expect(due.map((t) => t.serviceCallId)).toEqual(["z", "é", "\uE000", "\uFFFD", "😀", "😀a"]);
      });

      it("when more timers are due than the limit, then only the first `limit` are returned", async () => {
        await apply(...[5, 3, 1, 4, 2].map((n) => schedule(`call-${n}`, NOW - 10 + n)));

        const due = await claim(NOW, 3);

        expect(due.map((t) => t.serviceCallId)).toEqual(["call-1", "call-2", "call-3"]);
      });

      it("when paging with the cursor of the last timer, then every due timer comes once, in order", async () => {
        const commands = Array.from({ length: 23 }, (_, i) =>
          schedule(`call-${i}`, NOW - 30 + (i % 3) * 10, { tenantId: i % 2 === 0 ? "t-a" : "t-b" }),
        );
        await apply(...commands);

        const seen: DueTimer[] = [];
        for (;;) {
          const last = seen.at(-1);
          const page = await claim(NOW, 4, last);
          seen.push(...page);
          if (page.length < 4) break;
        }

        const ids = seen.map((t) => `${t.tenantId}/${t.serviceCallId}`);
        expect(new Set(ids).size).toBe(23);
        expect(seen).toEqual(await claim(NOW, 100));
      });

      it("when a timer is Reached, Cancelled or not yet due, then it is left out; one due now is in", async () => {
        await apply(schedule("reached", NOW - 100), schedule("cancelled", NOW - 50), cancel("tombstone"));
        await fireDue(NOW - 100);
        await apply(
          cancel("cancelled", { timestampMs: 2 }),
          schedule("due-now", NOW),
          schedule("due-later", NOW + 1),
          schedule("overdue", NOW - 1),
        );

        const due = await claim(NOW, 10);

        expect(due.map((t) => t.serviceCallId)).toEqual(["overdue", "due-now"]);
      });
    });

    describe("markReached", () => {
      it("when due timers are marked, then they are Reached at reachedAt and no longer due", async () => {
        await apply(schedule("call-1", NOW - 10, { data: '{"x":1}', correlationId: "req-1" }), schedule("call-2", NOW));
        const due = await claim(NOW, 10);

        const marked = await store.markReached(due, NOW + 7, OWNER);

        expect(marked).toEqual([key("call-1"), key("call-2")]);
        expect(await store.get(key("call-1"))).toMatchObject({
          state: "Reached",
          dueAtMs: NOW - 10,
          data: '{"x":1}',
          correlationId: "req-1",
          reachedAtMs: NOW + 7,
          updatedAtMs: NOW + 7,
        });
        expect(await claim(NOW + 1000, 10)).toEqual([]);
        expect(await store.countScheduled()).toBe(0);
      });

      it("when a timer changed or was cancelled after it was read, then it is not marked", async () => {
        await apply(
          schedule("moved", NOW, { data: "1", correlationId: "c" }),
          schedule("new-data", NOW, { data: "1", correlationId: "c" }),
          schedule("new-correlation", NOW, { data: "1", correlationId: "c" }),
          schedule("cancelled", NOW, { data: "1", correlationId: "c" }),
          schedule("unchanged", NOW, { data: "1", correlationId: "c" }),
        );
        const due = await claim(NOW, 10);
        await apply(
          schedule("moved", NOW - 1, { data: "1", correlationId: "c", timestampMs: 2 }),
          schedule("new-data", NOW, { data: "2", correlationId: "c", timestampMs: 2 }),
          schedule("new-correlation", NOW, { data: "1", correlationId: null, timestampMs: 2 }),
          cancel("cancelled", { timestampMs: 2 }),
        );

        const marked = await store.markReached(due, NOW + 1, OWNER);

        expect(marked).toEqual([key("unchanged")]);
        expect(await store.get(key("moved"))).toMatchObject({ state: "Scheduled", dueAtMs: NOW - 1 });
        expect(await store.get(key("new-data"))).toMatchObject({ state: "Scheduled", data: "2" });
        expect(await store.get(key("new-correlation"))).toMatchObject({ state: "Scheduled", correlationId: null });
        expect(await store.get(key("cancelled"))).toMatchObject({ state: "Cancelled" });
        expect(await store.get(key("unchanged"))).toMatchObject({ state: "Reached", reachedAtMs: NOW + 1 });
      });

      it("when a timer without data and correlationId is marked, then it is Reached", async () => {
        await apply(schedule("bare", NOW));

        const marked = await store.markReached(await claim(NOW, 10), NOW, OWNER);

        expect(marked).toEqual([key("bare")]);
        expect(await store.get(key("bare"))).toMatchObject({ state: "Reached", data: null, correlationId: null });
      });

      it("when a timer is marked twice, then the second call marks nothing and keeps the first reachedAt", async () => {
        await apply(schedule("call-1", NOW));
        const due = await claim(NOW, 10);
        await store.markReached(due, NOW + 1, OWNER);

        expect(await store.markReached(due, NOW + 2, OWNER)).toEqual([]);
        expect(await store.get(key("call-1"))).toMatchObject({ state: "Reached", reachedAtMs: NOW + 1 });
      });
    });

    describe("generation", () => {
      it("when a timer is created, changed, re-sent, cancelled and re-armed, then its generation counts the versions", async () => {
        await apply(schedule("call-1", NOW + 100, { timestampMs: 1 }));
        expect((await store.get(key("call-1")))?.generation).toBe(1);

        await apply(schedule("call-1", NOW + 100, { data: '{"v":2}', timestampMs: 2 }));
        await apply(schedule("call-1", NOW + 100, { data: '{"v":2}', timestampMs: 3 }));
        expect(await store.get(key("call-1"))).toMatchObject({ generation: 2, commandTs: 3 });

        await apply(cancel("call-1", { timestampMs: 4 }));
        expect(await store.get(key("call-1"))).toMatchObject({ state: "Cancelled", generation: 2 });

        await apply(schedule("call-1", NOW + 100, { data: '{"v":2}', timestampMs: 5 }));
        expect(await store.get(key("call-1"))).toMatchObject({ state: "Scheduled", generation: 3 });
        expect((await claim(NOW + 100, 10)).map((t) => t.generation)).toEqual([3]);
      });

      it("when the same dueAt is read at one generation and marked at another, then it is not marked", async () => {
        await apply(schedule("call-1", NOW, { data: "1", timestampMs: 1 }));
        const [read] = await claim(NOW, 10);

        const marked = await store.markReached([{ ...read!, generation: read!.generation + 1 }], NOW, OWNER);

        expect(marked).toEqual([]);
        expect(await store.get(key("call-1"))).toMatchObject({ state: "Scheduled" });
      });
    });

    describe("claims", () => {
      const OTHER = "instance-b";

      it("when one owner has claimed due timers, then another owner's claim does not get them", async (context) => {
        if (!harness.recordsClaims) return context.skip("the store serves one instance only");
        await apply(schedule("a", NOW - 2), schedule("b", NOW - 1), schedule("c", NOW));
        const first = await claim(NOW, 2);

        const second = await claim(NOW, 10, undefined, OTHER);

        expect(first.map((t) => t.serviceCallId)).toEqual(["a", "b"]);
        expect(second.map((t) => t.serviceCallId)).toEqual(["c"]);
      });

      it("when a claim has expired, then another owner takes it over and the first owner's mark is refused", async (context) => {
        if (!harness.recordsClaims) return context.skip("the store serves one instance only");
        await apply(schedule("a", NOW));
        const stale = await claim(NOW, 10);

        const takenOver = await claim(NOW + CLAIM_TTL_MS + 1, 10, undefined, OTHER);

        expect(takenOver.map((t) => t.serviceCallId)).toEqual(["a"]);
        expect(await store.markReached(stale, NOW + CLAIM_TTL_MS + 2, OWNER)).toEqual([]);
        expect(await store.markReached(takenOver, NOW + CLAIM_TTL_MS + 2, OTHER)).toEqual([key("a")]);
      });

      it("when an owner releases its claims, then another owner can claim the timers at once", async (context) => {
        if (!harness.recordsClaims) return context.skip("the store serves one instance only");
        await apply(schedule("a", NOW), schedule("b", NOW));
        await claim(NOW, 10);

        await store.releaseClaims(OWNER, [key("a")]);
        expect((await claim(NOW, 10, undefined, OTHER)).map((t) => t.serviceCallId)).toEqual(["a"]);
        await store.releaseClaims(OWNER);
        expect((await claim(NOW, 10, undefined, OTHER)).map((t) => t.serviceCallId)).toEqual(["a", "b"]);
      });

      it("when claims are released by an owner that holds none, then nothing changes", async () => {
        await apply(schedule("a", NOW));
        await claim(NOW, 10);

        await store.releaseClaims(OTHER);

        expect((await claim(NOW, 10)).map((t) => t.serviceCallId)).toEqual(["a"]);
      });
    });

    describe("nextDueAt and countScheduled", () => {
      it("when no timer is Scheduled, then nextDueAt is null and the count is 0", async () => {
        expect(await store.nextDueAt()).toBeNull();
        expect(await store.countScheduled()).toBe(0);
      });

      it("when timers are Reached or Cancelled, then only the Scheduled ones count", async () => {
        await apply(schedule("reached", NOW - 30), schedule("cancelled", NOW - 20));
        await fireDue(NOW - 30);
        await apply(
          cancel("cancelled", { timestampMs: 2 }),
          cancel("tombstone"),
          schedule("later", NOW + 300),
          schedule("soon", NOW + 200),
          schedule("soonest-other-tenant", NOW + 250, { tenantId: "globex" }),
        );

        expect(await store.nextDueAt()).toBe(NOW + 200);
        expect(await store.countScheduled()).toBe(3);
      });
    });

    describe("stored values", () => {
      it("when get names an unknown key, then it returns undefined", async () => {
        await apply(schedule("known", NOW));

        expect(await store.get(key("unknown"))).toBeUndefined();
        expect(await store.get(key("known", "other-tenant"))).toBeUndefined();
      });

      it("when data is JSON text, then it is kept byte for byte (unicode, nested, 16 KiB)", async () => {
        const unicode = '{"name":"Zoë","emoji":"🎉","escaped":"\\u00e9\\n","nested":{"list":[1,2.50,{"deep":null}]}}';
        const spaced = ' { "spaced" : [ 1 , 2 ] } ';
        const filler = "€".repeat(5000);
        const padding = "x".repeat(16384 - Buffer.byteLength(JSON.stringify({ filler })));
        const large = JSON.stringify({ filler: filler + padding });
        expect(Buffer.byteLength(large)).toBe(16384);
        await apply(
          schedule("unicode", NOW, { data: unicode }),
          schedule("spaced", NOW, { data: spaced }),
          schedule("large", NOW, { data: large }),
        );

        expect((await store.get(key("unicode")))?.data).toBe(unicode);
        expect((await store.get(key("spaced")))?.data).toBe(spaced);
        expect((await store.get(key("large")))?.data).toBe(large);
        expect((await claim(NOW, 10)).map((t) => t.data)).toEqual([large, spaced, unicode]);
      });

      it("when a serviceCallId is 256 code points with emoji, then it round trips through every method", async () => {
        const longId = Array.from({ length: 256 }, (_, i) => ["😀", "é", "字", "a"][i % 4]).join("");
        expect([...longId]).toHaveLength(256);
        await apply(schedule(longId, NOW, { correlationId: "ß".repeat(128) }));

        expect((await store.get(key(longId)))?.serviceCallId).toBe(longId);
        const due = await claim(NOW, 10);
        expect(due.map((t) => t.serviceCallId)).toEqual([longId]);
        expect(await store.markReached(due, NOW, OWNER)).toEqual([key(longId)]);
        expect(await store.get(key(longId))).toMatchObject({ state: "Reached", correlationId: "ß".repeat(128) });
      });
    });

    describe("lifecycle", () => {
      it("when the store is reopened, then every timer is kept", async (context) => {
        if (harness.reopen === undefined) return context.skip("the store is not durable");
        await apply(
          schedule("scheduled", NOW + 100, { data: '{"k":"v"}', correlationId: "req" }),
          schedule("reached", NOW - 100),
          schedule("cancelled", NOW + 100),
          cancel("tombstone"),
        );
        await fireDue(NOW);
        await apply(cancel("cancelled", { timestampMs: 2 }));
        const keys = ["scheduled", "reached", "cancelled", "tombstone"].map((id) => key(id));
        const before = await Promise.all(keys.map((k) => store.get(k)));
        expect(before.map((t) => t?.state)).toEqual(["Scheduled", "Reached", "Cancelled", "Cancelled"]);

        await store.close();
        store = await harness.reopen();

        expect(await Promise.all(keys.map((k) => store.get(k)))).toEqual(before);
        expect(await store.nextDueAt()).toBe(NOW + 100);
        expect(await store.countScheduled()).toBe(1);
        expect((await claim(NOW + 100, 10)).map(keyOf)).toEqual([key("scheduled")]);
      });

      it("when the store is closed, then further calls fail and closing again is harmless", async () => {
        await store.close();

        await expect(store.get(key("any"))).rejects.toThrow();
        await expect(apply(schedule("any", NOW))).rejects.toThrow();
        await expect(store.close()).resolves.toBeUndefined();
      });
    });
  });
}
