import { describe, expect, it } from "vitest";
import { SQLITE_QUERY_SQL } from "../../src/adapters/sqlite/sqlite-timer-queries.js";
import { SQLITE_RETENTION_SQL } from "../../src/adapters/sqlite/sqlite-timer-retention.js";
import { describeTimerQueriesContract } from "./timer-queries.contract.js";
import { describeTimerRetentionContract } from "./timer-retention.contract.js";
import { sqliteHarness } from "./query-harnesses.js";

describeTimerQueriesContract("SqliteTimerQueries", sqliteHarness);
describeTimerRetentionContract("SqliteTimerRetention", sqliteHarness);

describe("SQLite query plans", () => {
  const params = {
    tenantId: "a",
    serviceCallId: "x",
    dueAfterMs: 0,
    dueBeforeMs: 1,
    afterDueAtMs: 0,
    afterServiceCallId: "",
    scanLimit: 10,
    limit: 5,
    cutoffMs: 1,
  };

  it("when a query or a retention delete of timers runs, then it is served by an index, never a scan of timer_schedules", async () => {
    const harness = await sqliteHarness();
    try {
      const statements = { ...SQLITE_QUERY_SQL, deleteFinalTimers: SQLITE_RETENTION_SQL.deleteFinalTimers };
      for (const [name, sql] of Object.entries(statements)) {
        const plan = (harness.database.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as { detail: string }[]).map((row) => row.detail);
        expect(
          plan.filter((step) => /^SCAN timer_schedules/.test(step)),
          `${name}: ${plan.join(" | ")}`,
        ).toEqual([]);
        expect(
          plan.some((step) => /USING (COVERING )?INDEX|USING PRIMARY KEY/.test(step)),
          `${name}: ${plan.join(" | ")}`,
        ).toBe(true);
      }
      const plan = (name: keyof typeof SQLITE_QUERY_SQL) =>
        (harness.database.prepare(`EXPLAIN QUERY PLAN ${SQLITE_QUERY_SQL[name]}`).all(params) as { detail: string }[])
          .map((row) => row.detail)
          .join(" | ");
      expect(plan("scanOneState")).toContain("COVERING INDEX timer_schedules_tenant_state_due_idx");
      expect(plan("countByState")).toContain("COVERING INDEX timer_schedules_tenant_state_due_idx (tenant_id=?)");
      expect(plan("avgDuration")).toContain("INDEX timer_schedules_tenant_state_due_idx (tenant_id=? AND state=?)");
      const retention = (
        harness.database.prepare(`EXPLAIN QUERY PLAN ${SQLITE_RETENTION_SQL.deleteFinalTimers}`).all(params) as { detail: string }[]
      )
        .map((r) => r.detail)
        .join(" | ");
      expect(retention).toContain("INDEX timer_schedules_final_updated_idx (updated_at<?)");
    } finally {
      await harness.cleanup();
    }
  });
});
