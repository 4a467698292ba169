import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SQLITE_CLAIM_SQL, dueCandidatesJson } from "../../src/adapters/sqlite/sqlite-timer-statements.js";
import { SQLITE_QUERY_SQL } from "../../src/adapters/sqlite/sqlite-timer-queries.js";
import { SQLITE_RETENTION_SQL } from "../../src/adapters/sqlite/sqlite-timer-retention.js";
import { SQLITE_HISTORY_SQL } from "../../src/adapters/sqlite/sqlite-timer-history.js";
import { describeTimerQueriesContract } from "./timer-queries.contract.js";
import { describePrefixCancelRetentionContract, describeTimerRetentionContract } from "./timer-retention.contract.js";
import { sqliteHarness } from "./query-harnesses.js";

describeTimerQueriesContract("SqliteTimerQueries", sqliteHarness);
describeTimerRetentionContract("SqliteTimerRetention", sqliteHarness);
describePrefixCancelRetentionContract("SqliteTimerRetention", sqliteHarness);

describe("SQLite query plans", () => {
  const params = {
    tenantId: "a",
    serviceCallId: "x",
    dueBeforeMs: 1,
    startDueAtMs: 0,
    startServiceCallId: "",
    scanLimit: 10,
    limit: 5,
    cutoffMs: 1,
    sinceMs: 0,
    beforeUpdatedAtMs: 10,
    beforeServiceCallId: "",
    state: "Failed",
    createdBy: "alice",
    fromMs: 0,
    toMs: 10,
    bucketMs: 1,
    capPlusOne: 11,
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
      expect(plan("countByState")).toContain("SEARCH timer_state_counts USING PRIMARY KEY (tenant_id=?)");
      // CONTRACT §14 changedDesc: a backwards walk of an updated_at index, no sort step.
      expect(plan("dueBuckets")).toContain("COVERING INDEX timer_schedules_tenant_state_due_idx");
      expect(plan("overdueCount")).toContain("COVERING INDEX timer_schedules_tenant_state_due_idx");
      expect(plan("scanChangedByTenant")).toContain("COVERING INDEX timer_schedules_tenant_updated_idx");
      expect(plan("scanChangedByState")).toContain("COVERING INDEX timer_schedules_tenant_state_updated_idx");
      expect(plan("scanChangedByCreatedBy")).toContain("COVERING INDEX timer_schedules_tenant_created_by_idx");
      for (const name of ["scanChangedByTenant", "scanChangedByState", "scanChangedByCreatedBy"] as const)
        expect(plan(name), name).not.toContain("TEMP B-TREE");
      const retention = (
        harness.database.prepare(`EXPLAIN QUERY PLAN ${SQLITE_RETENTION_SQL.deleteFinalTimers}`).all(params) as { detail: string }[]
      )
        .map((r) => r.detail)
        .join(" | ");
      expect(retention).toContain("INDEX timer_schedules_final_updated_idx (updated_at<?)");
      // A timer's history (CONTRACT §19): read, trimmed and deleted through its key's index, never scanned.
      const historyPlans = [
        ["getWithHistory", SQLITE_QUERY_SQL.getWithHistory, params],
        ["trim", SQLITE_HISTORY_SQL.trim, ["acme", "a", 20]],
        ["dropAll", SQLITE_HISTORY_SQL.dropAll, ["acme", "a"]],
      ] as const;
      for (const [name, sql, values] of historyPlans) {
        const steps = (harness.database.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(values) as { detail: string }[]).map((r) => r.detail);
        expect(steps.join(" | "), name).toContain("INDEX timer_history_key_idx (tenant_id=? AND service_call_id=?)");
        expect(
          steps.filter((step) => /^SCAN/.test(step)),
          `${name}: ${steps.join(" | ")}`,
        ).toEqual([]);
      }
    } finally {
      await harness.cleanup();
    }
  });
});

describe("SQLite fair claim", () => {
  it("when the candidates' due timers are read, then each candidate's range is walked in the tenant due index from its position and its rows read by key", async () => {
    const harness = await sqliteHarness();
    try {
      const candidates = dueCandidatesJson([
        { tenantId: "a", after: undefined },
        { tenantId: "b", after: { dueAtMs: 5, serviceCallId: "x" } },
      ]);
      const plan = (
        harness.database.prepare(`EXPLAIN QUERY PLAN ${SQLITE_CLAIM_SQL.candidatesDue}`).all({ candidates, nowMs: 10, share: 3 }) as {
          detail: string;
        }[]
      ).map((row) => row.detail);

      expect(
        plan.filter((step) => /^SCAN timer/.test(step)),
        plan.join(" | "),
      ).toEqual([]);
      expect(plan).toContain("SEARCH timer USING PRIMARY KEY (tenant_id=? AND service_call_id=?)");
      expect(plan).toContain(
        "SEARCH due USING COVERING INDEX timer_schedules_tenant_state_due_idx (tenant_id=? AND state=? AND (due_at,service_call_id)>(?,?) AND due_at<?)",
      );
    } finally {
      await harness.cleanup();
    }
  });
});

describe("SQLite statements", () => {
  it("when a SQLite statement binds its LIMIT, then as `+@param`, which SQLite's planner does not take for a constant (a bare one re-prepares the statement at every run)", () => {
    const folder = join(import.meta.dirname, "../../src/adapters/sqlite");
    const bare = readdirSync(folder)
      .filter((file) => file.endsWith(".ts"))
      .flatMap((file) => [...readFileSync(join(folder, file), "utf8").matchAll(/LIMIT\s+[@?:$]\w*/gi)].map((m) => `${file}: ${m[0]}`));

    expect(bare).toEqual([]);
  });
});
