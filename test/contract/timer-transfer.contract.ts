import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { TimerTransfer, TransferRecord } from "../../src/app/transfer/timer-transfer.js";
import type { TimerStore } from "../../src/app/timer-store.js";
import { isScheduled, type Timer } from "../../src/domain/timer.js";
import { exportedLines, exportLines, fixtureRecords, timersInEveryState } from "../support/transfer-fixtures.js";

/** A fresh, empty store: its transfer adapter, the store itself on the same data, and a second transfer. */
export interface TransferHarness {
  readonly transfer: TimerTransfer;
  /**
   * Opens the service's store on the same file or schema, to see what it makes of the imported rows:
   * after the import, as the procedure starts the service after it (a SQLite store reads its prefix
   * cancels when it opens).
   */
  openStore(): Promise<TimerStore>;
  openTransfer(): Promise<TimerTransfer>;
  cleanup(): Promise<void>;
}

const T0 = Date.parse("2026-11-28T12:00:00.000Z");

const timerRecords = (records: readonly TransferRecord[]) => records.filter((r) => r.kind === "timer");

/** A timer as the store's `get` reads it: the history is read apart (`get` with `history: true`). */
function withoutHistory({ history: _history, ...timer }: Timer): Timer {
  return timer;
}

/** CONTRACT §18 export and import, run against every TimerTransfer adapter. */
export function describeTimerTransferContract(name: string, open: () => Promise<TransferHarness>): void {
  describe(`${name} (timer transfer contract)`, () => {
    let harness: TransferHarness;
    beforeEach(async () => {
      harness = await open();
    });
    afterEach(async () => {
      await harness.cleanup();
    });

    it("when timers in every state are imported into an empty store, then each is created and an export gives the same lines", async () => {
      const records = fixtureRecords(T0);
      const counts = await harness.transfer.importBatch(records);
      expect(counts).toEqual({
        created: timerRecords(records).length,
        replaced: 0,
        kept: 0,
        prefixCancels: { created: 1, replaced: 0, kept: 0 },
      });
      expect(await exportedLines(harness.transfer.exportRecords({ history: true }))).toEqual(exportLines(records));
    });

    it("when an export is not asked for histories, then no timer carries one; a replacing import replaces the stored history", async () => {
      const records = fixtureRecords(T0);
      await harness.transfer.importBatch(records);
      const withHistory = timerRecords(records).filter((r) => r.kind === "timer" && r.timer.history != null);
      expect(withHistory.length).toBeGreaterThan(0);
      for await (const record of harness.transfer.exportRecords({})) {
        if (record.kind === "timer") expect(record.timer.history ?? null, record.timer.serviceCallId).toBeNull();
      }
      const stored = withHistory[0]!.kind === "timer" ? withHistory[0]!.timer : undefined;
      const newer: Timer = withoutHistory({ ...stored!, commandTs: stored!.commandTs + 1 });
      expect(await harness.transfer.importBatch([{ kind: "timer", timer: newer }])).toMatchObject({ replaced: 1 });
      const exported: TransferRecord[] = [];
      for await (const record of harness.transfer.exportRecords({ tenantId: newer.tenantId, history: true })) exported.push(record);
      const after = exported.find((r) => r.kind === "timer" && r.timer.serviceCallId === newer.serviceCallId);
      expect(after?.kind === "timer" ? (after.timer.history ?? null) : "missing").toBeNull();
    });

    it("when timers are imported, then the store reads each back exactly as it was", async () => {
      const { timers } = timersInEveryState(T0);
      await harness.transfer.importBatch(fixtureRecords(T0));
      for (const timer of timers) expect(await (await harness.openStore()).get(timer), timer.serviceCallId).toEqual(withoutHistory(timer));
    });

    it("when the same file is imported twice, then the second import keeps everything and changes nothing", async () => {
      const records = fixtureRecords(T0);
      await harness.transfer.importBatch(records);
      const again = await harness.transfer.importBatch(records);
      expect(again).toEqual({
        created: 0,
        replaced: 0,
        kept: timerRecords(records).length,
        prefixCancels: { created: 0, replaced: 0, kept: 1 },
      });
      expect(await exportedLines(harness.transfer.exportRecords({ history: true }))).toEqual(exportLines(records));
    });

    it("when a line's commandTs is newer than the stored timer's, then it replaces it; equal or older ones are kept (§3.2)", async () => {
      const { timers } = timersInEveryState(T0);
      const stored = timers[0]!;
      await harness.transfer.importBatch([{ kind: "timer", timer: stored }]);
      const older: Timer = { ...stored, commandTs: stored.commandTs - 1, dueAtMs: T0 + 99 };
      const equal: Timer = { ...stored, dueAtMs: T0 + 98 };
      expect(await harness.transfer.importBatch([{ kind: "timer", timer: older }])).toMatchObject({ kept: 1 });
      expect(await harness.transfer.importBatch([{ kind: "timer", timer: equal }])).toMatchObject({ kept: 1 });
      expect(await (await harness.openStore()).get(stored)).toEqual(withoutHistory(stored));
      const newer: Timer = { ...stored, commandTs: stored.commandTs + 1, state: "Reached", reachedAtMs: T0 };
      expect(await harness.transfer.importBatch([{ kind: "timer", timer: newer }])).toMatchObject({ created: 0, replaced: 1, kept: 0 });
      expect(await (await harness.openStore()).get(stored)).toEqual(withoutHistory(newer));
    });

    it("when timers are imported, then the store's counts and due tenants follow: each Scheduled timer is counted and claimed when due", async () => {
      const { timers } = timersInEveryState(T0);
      await harness.transfer.importBatch(fixtureRecords(T0));
      const scheduled = timers.filter(isScheduled);
      const counts = await (await harness.openStore()).countScheduledOf(["acme", "globex"]);
      expect(Object.fromEntries(counts)).toEqual({
        acme: scheduled.filter((t) => t.tenantId === "acme").length,
        globex: scheduled.filter((t) => t.tenantId === "globex").length,
      });
      const due = await (
        await harness.openStore()
      ).claimDue({ nowMs: T0 + 3_600_000 * 24 * 30, limit: 100, owner: "test", leaseUntilMs: T0 + 3_600_000 * 24 * 31 });
      expect(due.map((t) => t.serviceCallId).sort()).toEqual(scheduled.map((t) => t.serviceCallId).sort());
      // The timer under the prefix cancel is claimed with the cancel's timestamp, so it is cancelled, never fired.
      expect(due.find((t) => t.serviceCallId === "order-4711:ship")?.prefixCancelTs).toBe(T0 - 120_000);
      expect(await (await harness.openStore()).nextDeadlineAt()).toBe(
        Math.min(...timers.filter((t) => t.state === "Fired").map((t) => t.deadlineAtMs!)),
      );
    });

    it("when a replaced timer leaves Scheduled, then the counts follow", async () => {
      const { timers } = timersInEveryState(T0);
      const scheduled = timers[0]!;
      await harness.transfer.importBatch([{ kind: "timer", timer: scheduled }]);
      await harness.transfer.importBatch([
        { kind: "timer", timer: { ...scheduled, state: "Cancelled", commandTs: scheduled.commandTs + 1 } },
      ]);
      expect((await (await harness.openStore()).countScheduledOf(["acme"])).get("acme") ?? 0).toBe(0);
    });

    it("when a prefix cancel is imported, then its sweep starts over in this store; an older one is kept", async () => {
      const records = fixtureRecords(T0);
      await harness.transfer.importBatch(records);
      expect(await (await harness.openStore()).unfinishedPrefixCancels()).toEqual([
        { tenantId: "globex", serviceCallIdPrefix: "order-4711:", commandTs: T0 - 120_000, progressKey: "" },
      ]);
      const older: TransferRecord = {
        kind: "prefixCancel",
        prefixCancel: { tenantId: "globex", serviceCallIdPrefix: "order-4711:", commandTs: T0 - 130_000, recordedAtMs: T0 },
      };
      expect((await harness.transfer.importBatch([older])).prefixCancels).toEqual({ created: 0, replaced: 0, kept: 1 });
      const newer: TransferRecord = {
        kind: "prefixCancel",
        prefixCancel: { tenantId: "globex", serviceCallIdPrefix: "order-4711:", commandTs: T0, recordedAtMs: T0 + 1 },
      };
      expect((await harness.transfer.importBatch([newer])).prefixCancels).toEqual({ created: 0, replaced: 1, kept: 0 });
      expect((await exportedLines(harness.transfer.exportRecords({ history: true }))).at(-1)).toBe(exportLines([newer])[0]);
    });

    it("when the export names a tenant, then it holds that tenant's timers and prefix cancels only", async () => {
      const records = fixtureRecords(T0);
      await harness.transfer.importBatch(records);
      const globex = records.filter((r) => (r.kind === "timer" ? r.timer.tenantId : r.prefixCancel.tenantId) === "globex");
      expect(await exportedLines(harness.transfer.exportRecords({ tenantId: "globex", history: true }))).toEqual(exportLines(globex));
      expect(await exportedLines(harness.transfer.exportRecords({ tenantId: "nobody", history: true }))).toEqual([]);
    });

    it("when the store is written during an export, then the export still reads the snapshot it started on", async () => {
      const records = fixtureRecords(T0);
      await harness.transfer.importBatch(records);
      const writer = await harness.openTransfer();
      try {
        const lines: string[] = [];
        for await (const line of (async function* (exported) {
          yield* exported;
        })(harness.transfer.exportRecords({ history: true }))) {
          if (lines.length === 1) {
            const late: Timer = { ...timersInEveryState(T0).timers[0]!, tenantId: "zz-late", serviceCallId: "written-during-export" };
            await writer.importBatch([
              { kind: "timer", timer: late },
              { kind: "timer", timer: { ...late, tenantId: "acme", serviceCallId: "0-first" } },
            ]);
          }
          lines.push(exportLines([line])[0]!);
        }
        expect(lines).toEqual(exportLines(records));
      } finally {
        await writer.close();
      }
      expect(await exportedLines(harness.transfer.exportRecords({ tenantId: "zz-late", history: true }))).toHaveLength(1);
    });
  });
}
