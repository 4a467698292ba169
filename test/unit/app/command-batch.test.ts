import { describe, expect, it } from "vitest";
import { commandKeys, decideCommandBatch, quotaTenants } from "../../../src/app/command-batch.js";
import { PrefixCancelIndex } from "../../../src/domain/prefix-cancel.js";
import type { TimerKey } from "../../../src/domain/timer.js";
import type { ScheduleTimerCommand, TimerCommand } from "../../../src/domain/timer-command.js";

const NOW = 1_764_108_000_000;
const HOUR = 3_600_000;
const schedule = (serviceCallId: string, timestampMs: number, tenantId = "acme"): ScheduleTimerCommand => ({
  kind: "schedule",
  tenantId,
  serviceCallId,
  dueAtMs: NOW + HOUR,
  data: null,
  correlationId: null,
  timestampMs,
});

/** A batch decided on an empty store that records which keys it read. */
function decide(commands: readonly TimerCommand[], rules: Parameters<typeof decideCommandBatch>[1], counts?: Map<string, number>) {
  const read: string[] = [];
  const batch = decideCommandBatch(commands, rules, {
    prefixIndex: new PrefixCancelIndex(),
    stored: (key: TimerKey) => void read.push(key.serviceCallId),
    ...(counts === undefined ? {} : { scheduledCounts: counts }),
  });
  return { ...batch, read };
}

describe("decideCommandBatch (the rules every store applies to a batch)", () => {
  it("when a command is older than now − retention, then it is ignored without reading its key", () => {
    const commands = [schedule("old", NOW - HOUR - 1), schedule("fresh", NOW - HOUR)];
    const { decisions, read, changed } = decide(commands, { nowMs: NOW, retentionMs: HOUR });

    expect(decisions.map((d) => d.outcome)).toEqual(["ignored", "accepted"]);
    expect(read).toEqual(["fresh"]);
    expect(changed.map((t) => t.serviceCallId)).toEqual(["fresh"]);
    expect([...commandKeys(commands, { nowMs: NOW, retentionMs: HOUR }).values()]).toEqual([{ tenantId: "acme", serviceCallId: "fresh" }]);
  });

  it("when one key appears twice, then it is read once and the second command sees the first's timer", () => {
    const { decisions, read, changed } = decide([schedule("a", 1), schedule("a", 2)], { nowMs: NOW });

    expect(read).toEqual(["a"]);
    expect(decisions[1]!.previous).toBe(decisions[0]!.next);
    expect(changed).toHaveLength(1);
    expect(changed[0]!.commandTs).toBe(2);
  });

  it("when a quota is set, then only the quota's tenants are counted and new timers past it are refused", () => {
    const commands = [schedule("a", 1), schedule("b", 1), schedule("x", 1, "other")];
    expect(quotaTenants(commands, { nowMs: NOW })).toEqual([]);
    expect(quotaTenants(commands, { nowMs: NOW, maxPendingPerTenant: 2 })).toEqual(["acme", "other"]);

    const { decisions } = decide(commands, { nowMs: NOW, maxPendingPerTenant: 2 }, new Map([["acme", 1]]));

    expect(decisions.map((d) => d.outcome)).toEqual(["accepted", "refused", "accepted"]);
  });
});
