import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DecideRules } from "../../src/app/command-batch.js";
import type { TimerQueries } from "../../src/app/queries/timer-queries.js";
import type { TimerRetention } from "../../src/app/retention/timer-retention.js";
import type { DueTimer, TimerStore } from "../../src/app/timer-store.js";
import { deadlineHistory, firingHistory } from "../../src/app/firing/firing-history.js";
import { CronerCalendar } from "../../src/adapters/cron/croner-calendar.js";
import { decideDeadline } from "../../src/domain/delivery-rules.js";
import { decideFiring } from "../../src/domain/firing-rules.js";
import { parseHistory, type CommandNote, type HistoryEntry } from "../../src/domain/timer-history.js";
import type { TimerCommand } from "../../src/domain/timer-command.js";

/** A store with the queries and retention over the same storage. */
export interface TimerHistoryHarness {
  readonly store: TimerStore;
  readonly queries: TimerQueries;
  readonly retention: TimerRetention;
  readonly cleanup: () => Promise<void>;
}

const NOW = 1_764_108_000_000;
const TENANT = "acme";
const OWNER = "instance-a";
const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const calendar = new CronerCalendar();

const key = (serviceCallId: string) => ({ tenantId: TENANT, serviceCallId });
const schedule = (serviceCallId: string, timestampMs: number, dueAtMs = NOW + 60_000, extra: object = {}): TimerCommand => ({
  kind: "schedule",
  tenantId: TENANT,
  serviceCallId,
  dueAtMs,
  data: null,
  correlationId: null,
  timestampMs,
  ...extra,
});
const cancel = (serviceCallId: string, timestampMs: number): TimerCommand => ({
  kind: "cancel",
  tenantId: TENANT,
  serviceCallId,
  correlationId: null,
  timestampMs,
});

/** Every store keeps a timer's history the same way (CONTRACT §19). */
export function describeTimerHistoryContract(name: string, open: () => Promise<TimerHistoryHarness>): void {
  describe(`${name} keeps each timer's history`, () => {
    let harness: TimerHistoryHarness;
    beforeEach(async () => {
      harness = await open();
    });
    afterEach(async () => {
      await harness.cleanup();
    });

    /** Applies commands one batch, each with a note naming it `cmd-{i}` (the first `startAt`). */
    const apply = async (commands: TimerCommand[], rules: Partial<DecideRules> = {}, notes?: CommandNote[]) => {
      const commandNotes = notes ?? commands.map((_, i) => ({ commandId: `cmd-${i}`, traceId: TRACE }));
      return harness.store.applyCommands(commands, { nowMs: NOW, historyEntries: 20, commandNotes, ...rules });
    };
    const historyOf = async (serviceCallId: string): Promise<HistoryEntry[]> =>
      parseHistory((await harness.queries.get(key(serviceCallId), { history: true }))?.history);

    /** Claims the due timers at `nowMs` and records their firings as the due-timer poll does, with `keep` entries. */
    const fireDue = async (nowMs: number, keep = 20) => {
      const due = await harness.store.claimDue({ nowMs, limit: 100, owner: OWNER, leaseUntilMs: nowMs + 30_000 });
      const firings = due.map((timer: DueTimer) => {
        const firing = decideFiring(timer, nowMs, calendar, timer.prefixCancelTs);
        const { tenantId, serviceCallId, dueAtMs, generation } = timer;
        return { tenantId, serviceCallId, dueAtMs, generation, next: firing.next, history: firingHistory(timer, firing, nowMs, keep) };
      });
      return harness.store.recordFirings(firings, OWNER);
    };

    it("when a command is applied, then its entry names it: type, commandId, timestampMs, traceId, applied", async () => {
      await apply([schedule("t-1", 5)]);
      expect(await historyOf("t-1")).toEqual([
        {
          at: new Date(NOW).toISOString(),
          kind: "command",
          type: "ScheduleTimer",
          commandId: "cmd-0",
          timestampMs: 5,
          traceId: TRACE,
          outcome: "applied",
        },
      ]);
    });

    it("when commands are ignored, then each entry says why: older, equal timestampMs, closed, prefix cancel", async () => {
      await apply([schedule("t-1", 5), schedule("t-1", 3), schedule("t-1", 5)]);
      const [, older, equal] = await historyOf("t-1");
      expect(older).toMatchObject({ outcome: "ignored", timestampMs: 3, reason: expect.stringContaining("older timestampMs") });
      expect(equal).toMatchObject({ outcome: "ignored", timestampMs: 5, reason: expect.stringContaining("equal timestampMs") });

      await apply([schedule("p-1", 1)]);
      await apply([{ kind: "cancelPrefix", tenantId: TENANT, serviceCallIdPrefix: "p-", correlationId: null, timestampMs: 10 }]);
      await apply([schedule("p-1", 7)]);
      expect((await historyOf("p-1")).at(-1)).toMatchObject({ outcome: "ignored", reason: expect.stringContaining("prefix cancel") });

      await apply([schedule("r-1", 1, NOW - 1)]);
      await fireDue(NOW);
      await apply([cancel("r-1", 1)]);
      expect((await historyOf("r-1")).at(-1)).toMatchObject({
        type: "CancelTimer",
        outcome: "ignored",
        reason: expect.stringContaining("closed to commands"),
      });
    });

    it("when a newer command changes nothing, then it is applied, as §3.2 and its outcome say", async () => {
      await apply([schedule("n-1", 1), cancel("n-1", 2)]);
      await apply([cancel("n-1", 3)]);
      expect((await historyOf("n-1")).at(-1)).toMatchObject({
        type: "CancelTimer",
        timestampMs: 3,
        outcome: "applied",
        reason: expect.stringContaining("nothing to change"),
      });
    });

    it("when a prefix cancel's sweep cancels a timer, then the timer's entry names the CancelTimersByPrefix", async () => {
      await apply([schedule("s-1", 1), schedule("s-2", 1)]);
      await apply([{ kind: "cancelPrefix", tenantId: TENANT, serviceCallIdPrefix: "s-", correlationId: null, timestampMs: 4 }]);
      const { decisions } = await harness.store.sweepPrefixCancel({ tenantId: TENANT, serviceCallIdPrefix: "s-" }, 10, NOW, 20);
      expect(decisions.filter((d) => d.outcome === "accepted")).toHaveLength(2);
      for (const id of ["s-1", "s-2"]) {
        expect((await harness.queries.get(key(id)))?.state).toBe("Cancelled");
        expect((await historyOf(id)).at(-1)).toEqual({
          at: new Date(NOW).toISOString(),
          kind: "command",
          type: "CancelTimersByPrefix",
          timestampMs: 4,
          outcome: "applied",
        });
      }
    });

    it("when a command is rejected on a stored timer, then its entry carries the code and the reason", async () => {
      await apply([schedule("r-1", 1, NOW - 1)]);
      await fireDue(NOW);
      await apply([schedule("r-1", 2)]);
      expect((await historyOf("r-1")).at(-1)).toMatchObject({ outcome: "rejected", code: "TIMER_FINAL", reason: expect.any(String) });

      await apply([schedule("q-1", 1), cancel("q-2", 1)]);
      await apply([schedule("q-2", 2)], { maxPendingPerTenant: 1 });
      // The wording of the CommandRejected the producer gets.
      expect((await historyOf("q-2")).at(-1)).toMatchObject({
        outcome: "rejected",
        code: "QUOTA_EXCEEDED",
        timestampMs: 2,
        reason: `tenant ${TENANT} has 1 Scheduled timers, its quota (TIMER_TENANT_MAX_PENDING)`,
      });
    });

    it("when a timer fires or misses, then the entry has the event id, attempt, lateMs and whether it was published", async () => {
      await apply([schedule("f-1", 1, NOW - 250), schedule("m-1", 1, NOW - 250, { maxLatenessMs: 100 })]);
      expect(await fireDue(NOW)).toHaveLength(2);
      expect((await historyOf("f-1")).at(-1)).toEqual({
        at: new Date(NOW).toISOString(),
        kind: "fired",
        eventId: `${TENANT}:f-1:${NOW - 250}:1`,
        attempt: 1,
        lateMs: 250,
        published: true,
      });
      expect((await historyOf("m-1")).at(-1)).toMatchObject({
        kind: "missed",
        eventId: `${TENANT}:m-1:${NOW - 250}:1`,
        lateMs: 250,
        published: true,
        reason: expect.stringContaining("maxLatenessMs"),
      });
    });

    it("when a recurring timer fires, then the entry names the occurrence", async () => {
      await apply([
        schedule("e-1", 1, NOW - 10, { repeat: { everyMs: 60_000, untilMs: null, maxOccurrences: null, firstDueAtMs: NOW - 10 } }),
      ]);
      await fireDue(NOW);
      expect((await historyOf("e-1")).at(-1)).toMatchObject({ kind: "fired", occurrence: 1, published: true });
    });

    it("when a tracked timer's completion times out, then a timeout entry follows its fired entry", async () => {
      const delivery = { maxRetries: 0, backoffMs: 1_000, completionTimeoutMs: 1_000 };
      await apply([schedule("d-1", 1, NOW - 1, { delivery })]);
      await fireDue(NOW);
      const later = NOW + 5_000;
      const passed = await harness.store.claimDeadlines({ nowMs: later, limit: 10, owner: OWNER, leaseUntilMs: later + 30_000 });
      expect(passed).toHaveLength(1);
      const timer = passed[0]!;
      const decision = decideDeadline(timer, later);
      const { tenantId, serviceCallId, attempt, deadlineAtMs } = timer;
      await harness.store.recordDeadlines(
        [{ tenantId, serviceCallId, attempt, deadlineAtMs, next: decision.next, history: deadlineHistory(timer, decision, later, 20) }],
        OWNER,
      );
      const kinds = (await historyOf("d-1")).map((e) => e.kind);
      expect(kinds).toEqual(["command", "fired", "timeout"]);
      expect((await historyOf("d-1")).at(-1)).toMatchObject({ kind: "timeout", attempt: 1, then: expect.stringContaining("TimedOut") });
    });

    it("when an operator retries through the HTTP API or over NATS, then the entry says whether a token was used", async () => {
      await apply([schedule("o-1", 1, NOW - 250, { maxLatenessMs: 100 })]);
      await fireDue(NOW);
      const retry: TimerCommand = { kind: "retry", tenantId: TENANT, serviceCallId: "o-1", correlationId: null, timestampMs: 5 };
      await apply([retry], {}, [{ commandId: "admin-1" }]);
      await apply([{ ...retry, timestampMs: 6 }], {}, [{ commandId: "nats-1" }]);
      const [, , http, nats] = await historyOf("o-1");
      expect(http).toMatchObject({ type: "RetryTimer", outcome: "applied", operator: { via: "http", token: true } });
      expect(nats).toMatchObject({ type: "RetryTimer", outcome: "ignored", operator: { via: "nats", token: false } });
    });

    it("when more entries come than are kept, then the oldest go first, for commands and firings alike", async () => {
      await apply(
        [1, 2, 3, 4, 5].map((ts) => schedule("b-1", ts, NOW - 1000 + ts)),
        { historyEntries: 3 },
      );
      expect((await historyOf("b-1")).map((e) => (e.kind === "command" ? e.timestampMs : e.kind))).toEqual([3, 4, 5]);
      await fireDue(NOW, 3);
      expect((await historyOf("b-1")).map((e) => (e.kind === "command" ? e.timestampMs : e.kind))).toEqual([4, 5, "fired"]);
    });

    it("when TIMER_HISTORY_ENTRIES is 0, then nothing is written", async () => {
      await apply([schedule("z-1", 1, NOW - 1), schedule("z-1", 0)], { historyEntries: 0 });
      const due = await harness.store.claimDue({ nowMs: NOW, limit: 10, owner: OWNER, leaseUntilMs: NOW + 30_000 });
      const firing = decideFiring(due[0]!, NOW, calendar, null);
      await harness.store.recordFirings([{ ...key("z-1"), dueAtMs: NOW - 1, generation: 1, next: firing.next }], OWNER);
      const record = await harness.queries.get(key("z-1"), { history: true });
      expect(record?.state).toBe("Reached");
      expect(record?.history ?? null).toBeNull();
    });

    it("when retention deletes a final timer, then its history goes with it", async () => {
      await apply([schedule("g-1", 1), cancel("g-1", 2)]);
      expect(await historyOf("g-1")).toHaveLength(2);
      expect(await harness.retention.deleteFinalTimers(NOW + 1, 10)).toBe(1);
      expect(await harness.queries.get(key("g-1"), { history: true })).toBeUndefined();
      await apply([schedule("g-1", 3)]);
      expect(await historyOf("g-1")).toHaveLength(1);
    });

    it("when a key has no timer, then there is no history and commands about it write none", async () => {
      await apply([{ kind: "retry", tenantId: TENANT, serviceCallId: "u-1", correlationId: null, timestampMs: 1 }]);
      expect(await harness.queries.get(key("u-1"), { history: true })).toBeUndefined();
    });

    it("when get is asked without history, then the record carries none", async () => {
      await apply([schedule("w-1", 1)]);
      expect(await harness.queries.get(key("w-1"))).not.toHaveProperty("history");
    });
  });
}
