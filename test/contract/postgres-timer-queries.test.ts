import { describe, expect, it } from "vitest";
import { describeTimerQueriesContract } from "./timer-queries.contract.js";
import { describeTimerRetentionContract } from "./timer-retention.contract.js";
import { postgresHarness } from "./query-harnesses.js";

describeTimerQueriesContract("PostgresTimerQueries", postgresHarness);
describeTimerRetentionContract("PostgresTimerRetention", postgresHarness);

describe("Postgres schema for queries and retention", () => {
  // Reports what the Postgres schema still lacks for CONTRACT v2 queries; see docs/design/messages.md.
  it("when the store is migrated, then its indexes are listed (informational)", async (context) => {
    const harness = await postgresHarness();
    try {
      const { rows } = await harness.pool.query<{ name: string }>(
        "SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'timer_schedules'",
      );
      context.annotate?.(`indexes: ${rows.map((r) => r.name).join(", ")}; v2 columns: ${harness.v2}`);
      expect(rows.length).toBeGreaterThan(0);
    } finally {
      await harness.cleanup();
    }
  });
});
