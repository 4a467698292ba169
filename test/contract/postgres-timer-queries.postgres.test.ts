import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import type pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_POSTGRES_MIGRATIONS_FOLDER, migratePostgres } from "../../src/adapters/postgres/postgres-migrations.js";
import { createPostgresPool } from "../../src/adapters/postgres/postgres-pool.js";
import { POSTGRES_QUERY_SQL, PostgresTimerQueries } from "../../src/adapters/postgres/postgres-timer-queries.js";
import { scanStartOf } from "../../src/app/queries/keyset-list.js";
import { TIMER_STATES } from "../../src/app/queries/timer-queries.js";
import { NOW, describeTimerQueriesContract, record } from "./timer-queries.contract.js";
import { describePrefixCancelRetentionContract, describeTimerRetentionContract } from "./timer-retention.contract.js";
import { dropPostgresHarnessSchemas, postgresHarness } from "./query-harnesses.js";
import { dropSchema, TEST_DATABASE_URL, uniqueSchema } from "../support/test-postgres.js";
import { propertySeed } from "../support/property-seed.js";
import { waitFor } from "../support/wait-for.js";

describeTimerQueriesContract("PostgresTimerQueries", postgresHarness);
describeTimerRetentionContract("PostgresTimerRetention", postgresHarness);
describePrefixCancelRetentionContract("PostgresTimerRetention", postgresHarness);
afterAll(() => dropPostgresHarnessSchemas());

describe("Postgres list scans", () => {
  it("when a list starts at dueAfter deep into a tenant's timers, then its index scan starts there (a few pages read)", async () => {
    const harness = await postgresHarness();
    try {
      await harness.seed(Array.from({ length: 20_000 }, (_, i) => record(`k-${String(i).padStart(6, "0")}`, NOW + i * 1_000)));
      await harness.pool.query("ANALYZE timer_schedules");
      const start = scanStartOf({ tenantId: "acme", limit: 100, nowMs: NOW, dueAfterMs: NOW + 15_000 * 1_000 });
      for (const mode of ["force_custom_plan", "force_generic_plan"]) {
        await harness.pool.query(`SET plan_cache_mode = ${mode}`);
        const { rows } = await harness.pool.query<{
          "QUERY PLAN": [{ Plan: { "Shared Hit Blocks": number; "Shared Read Blocks": number } }];
        }>({
          text: `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${POSTGRES_QUERY_SQL.scanOneState}`,
          values: ["acme", start.dueAtMs, start.serviceCallId, Number.MAX_SAFE_INTEGER, 101],
        });
        const plan = rows[0]!["QUERY PLAN"][0].Plan;
        // Starting at the scan's first entry: a root-to-leaf descent and a leaf or two. From the
        // start of the tenant's range it would read ~60 leaf pages.
        expect(plan["Shared Hit Blocks"] + plan["Shared Read Blocks"], mode).toBeLessThan(10);
      }
    } finally {
      await harness.cleanup();
    }
  });
});

describe("Postgres changedDesc scans (CONTRACT §14)", () => {
  it("when a tenant has 20,000 timers, then each changedDesc scan walks its updated_at index backwards: no sort, a few pages read", async () => {
    const harness = await postgresHarness();
    try {
      await harness.seed(
        Array.from({ length: 40_000 }, (_, i) =>
          record(`k-${String(i).padStart(6, "0")}`, NOW + i, {
            tenantId: i % 2 === 0 ? "acme" : "globex",
            updatedAtMs: NOW - i * 10,
            state: TIMER_STATES[Math.floor(i / 2) % TIMER_STATES.length]!,
            createdBy: i % 3 === 0 ? "alice" : null,
          }),
        ),
      );
      // As autovacuum leaves a settled table: the visibility map makes index-only scans cheap.
      await harness.pool.query("VACUUM ANALYZE timer_schedules");
      const scans = [
        ["scanChangedByTenant", "timer_schedules_tenant_updated_idx", []],
        ["scanChangedByState", "timer_schedules_tenant_state_updated_idx", []],
        ["scanChangedByCreatedBy", "timer_schedules_tenant_created_by_idx", ["alice"]],
      ] as const;
      type Node = {
        "Node Type": string;
        "Index Name"?: string;
        "Scan Direction"?: string;
        Plans?: Node[];
        "Shared Hit Blocks": number;
        "Shared Read Blocks": number;
      };
      const all = (node: Node): Node[] => [node, ...(node.Plans ?? []).flatMap(all)];
      for (const [name, indexName, extra] of scans) {
        for (const mode of ["force_custom_plan", "force_generic_plan"]) {
          await harness.pool.query(`SET plan_cache_mode = ${mode}`);
          const { rows } = await harness.pool.query<{ "QUERY PLAN": [{ Plan: Node }] }>({
            text: `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${POSTGRES_QUERY_SQL[name]}`,
            values: ["acme", NOW - 50_000, "", -Number.MAX_SAFE_INTEGER, 101, ...extra],
          });
          const plan = rows[0]!["QUERY PLAN"][0].Plan;
          const nodes = all(plan);
          const label = `${name} ${mode}: ${nodes.map((n) => `${n["Node Type"]} ${n["Index Name"] ?? ""}`).join(" > ")}`;
          expect(
            nodes.map((n) => n["Node Type"]),
            label,
          ).not.toContain("Sort");
          expect(
            nodes.some((n) => n["Index Name"] === indexName && n["Scan Direction"] === "Backward"),
            label,
          ).toBe(true);
          expect(plan["Shared Hit Blocks"] + plan["Shared Read Blocks"], label).toBeLessThan(20);
        }
      }
    } finally {
      await harness.cleanup();
    }
  });
});

describe("Postgres schema for queries and retention", () => {
  // Reports what the Postgres schema still lacks for CONTRACT v2 queries; see docs/design/messages.md.
  it("when the store is migrated, then its indexes are listed (informational)", async (context) => {
    const harness = await postgresHarness();
    try {
      const { rows } = await harness.pool.query<{ name: string }>(
        "SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'timer_schedules'",
      );
      context.annotate?.(`indexes: ${rows.map((r) => r.name).join(", ")}`);
      expect(rows.length).toBeGreaterThan(0);
    } finally {
      await harness.cleanup();
    }
  });
});

describe("Postgres timer_state_counts", () => {
  const states = ["Scheduled", "Reached", "Cancelled", "Missed", "Fired", "Completed", "Failed", "TimedOut"] as const;

  /** The triggers' counts summed over slots, and a recount of the rows, in the same shape. */
  async function countsAndRecount(pool: pg.Pool): Promise<{ kept: unknown[]; recounted: unknown[] }> {
    const { rows: kept } = await pool.query(
      `SELECT tenant_id, state, sum(count)::int AS count, sum(duration_sum_ms)::int AS duration_sum_ms,
         sum(duration_count)::int AS duration_count
       FROM timer_state_counts GROUP BY 1, 2 HAVING sum(count) <> 0 ORDER BY 1, 2`,
    );
    const { rows: recounted } = await pool.query(
      `SELECT tenant_id, state, count(*)::int AS count,
         coalesce(sum(CASE WHEN state = 'Completed' AND completed_at IS NOT NULL AND fired_at IS NOT NULL THEN completed_at - fired_at END), 0)::int AS duration_sum_ms,
         count(CASE WHEN state = 'Completed' AND completed_at IS NOT NULL AND fired_at IS NOT NULL THEN 1 END)::int AS duration_count
       FROM timer_schedules GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    return { kept, recounted };
  }

  it("when several connections insert, upsert, change states and instants, and delete at once, then the triggers' counts equal a recount, also after the rows of ended backends are folded", async () => {
    const harness = await postgresHarness();
    // Four more connections: four backends, so several counter slots and concurrent transactions.
    const schema = await harness.pool.query<{ s: string }>("SELECT current_schema() AS s").then((r) => r.rows[0]!.s);
    const writers = createPostgresPool({
      url: TEST_DATABASE_URL,
      schema,
      maxConnections: 4,
      timeoutMs: 5_000,
      onIdleError: () => {},
    });
    try {
      const instant = fc.option(fc.integer({ min: 0, max: 10_000 }), { freq: 5 });
      const row = fc.record({
        tenant: fc.constantFrom("a", "b", "c"),
        id: fc.integer({ min: 0, max: 149 }).map((n) => `t${n}`),
        state: fc.constantFrom(...states),
        firedAt: instant,
        completedAt: instant,
      });
      const operation = fc.record({
        kind: fc.constantFrom("upsert", "upsert", "state", "instants", "delete"),
        // Several rows per statement, as the store's batch statements write them.
        rows: fc.uniqueArray(row, { minLength: 1, maxLength: 8, selector: (r) => `${r.tenant}/${r.id}` }),
      });
      const operations = fc.sample(fc.array(operation, { minLength: 800, maxLength: 800 }), { seed: propertySeed(), numRuns: 1 })[0]!;
      const run = async ({ kind, rows }: (typeof operations)[number]): Promise<void> => {
        const tenants = rows.map((r) => r.tenant);
        const ids = rows.map((r) => r.id);
        if (kind === "upsert") {
          await writers.query(
            `INSERT INTO timer_schedules (tenant_id, service_call_id, state, due_at, command_ts, registered_at, updated_at, fired_at, completed_at)
             SELECT t, i, s, 5, 1, 1, 1, f, c FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[]) AS u(t, i, s, f, c)
             ON CONFLICT (tenant_id, service_call_id) DO UPDATE SET state = excluded.state, fired_at = excluded.fired_at, completed_at = excluded.completed_at`,
            [tenants, ids, rows.map((r) => r.state), rows.map((r) => r.firedAt), rows.map((r) => r.completedAt)],
          );
        } else if (kind === "state") {
          await writers.query(
            `UPDATE timer_schedules t SET state = u.s FROM unnest($1::text[], $2::text[], $3::text[]) AS u(tn, i, s)
             WHERE t.tenant_id = u.tn AND t.service_call_id = u.i`,
            [tenants, ids, rows.map((r) => r.state)],
          );
        } else if (kind === "instants") {
          await writers.query(
            `UPDATE timer_schedules t SET fired_at = u.f, completed_at = u.c FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) AS u(tn, i, f, c)
             WHERE t.tenant_id = u.tn AND t.service_call_id = u.i`,
            [tenants, ids, rows.map((r) => r.firedAt), rows.map((r) => r.completedAt)],
          );
        } else {
          await writers.query(
            "DELETE FROM timer_schedules t USING unnest($1::text[], $2::text[]) AS u(tn, i) WHERE t.tenant_id = u.tn AND t.service_call_id = u.i",
            [tenants, ids],
          );
        }
      };
      // Four streams of statements at once; a deadlock between two of them would fail the test.
      const lanes = [0, 1, 2, 3].map((lane) => operations.filter((_, i) => i % 4 === lane));
      await Promise.all(
        lanes.map(async (lane) => {
          for (const operation of lane) await run(operation);
        }),
      );
      // Each writing backend kept its own counter rows.
      const { rows: slots } = await harness.pool.query<{ slot: number }>("SELECT DISTINCT slot FROM timer_state_counts WHERE slot <> 0");
      expect(slots.length).toBeGreaterThanOrEqual(4);
      const { kept, recounted } = await countsAndRecount(harness.pool);
      expect(recounted.length).toBeGreaterThan(10);
      expect(kept).toEqual(recounted);

      const stats = await new PostgresTimerQueries(harness.pool).stats("a");
      const recountedA = recounted.filter((r) => (r as { tenant_id: string }).tenant_id === "a") as { state: string; count: number }[];
      for (const state of states) expect(stats.byState[state]).toBe(recountedA.find((r) => r.state === state)?.count ?? 0);

      // The writers' backends end; the next start folds their rows into slot 0, keeping the counts.
      await writers.end();
      const writerPids = slots.map((s) => s.slot);
      await waitFor(
        () => harness.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ANY($1::int[])", [writerPids]),
        ({ rows }) => rows[0]!.n === 0,
        10_000,
        "the writers' backends ended",
      );
      await migratePostgres(harness.pool, schema);
      const { rows: left } = await harness.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM timer_state_counts WHERE slot = ANY($1::int[])",
        [writerPids],
      );
      expect(left[0]!.n).toBe(0);
      expect((await countsAndRecount(harness.pool)).kept).toEqual(recounted);

      await harness.pool.query("TRUNCATE timer_schedules");
      expect((await harness.queries.stats("a")).byState.Scheduled).toBe(0);
    } finally {
      await writers.end().catch(() => undefined);
      await harness.cleanup();
    }
  });

  it("when a schema from before the counts is migrated, then the counts start from its rows", async () => {
    // The migrations up to 0001 only, in a copy of the folder with a shortened journal.
    const folder = mkdtempSync(join(tmpdir(), "timer-migrations-"));
    const schema = uniqueSchema("counts_upgrade");
    const pool = createPostgresPool({ url: TEST_DATABASE_URL, schema, maxConnections: 1, timeoutMs: 5_000, onIdleError: () => {} });
    try {
      cpSync(DEFAULT_POSTGRES_MIGRATIONS_FOLDER, folder, { recursive: true });
      const journalPath = join(folder, "meta", "_journal.json");
      const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: { tag: string }[] };
      journal.entries = journal.entries.filter((e) => e.tag === "0000_init" || e.tag === "0001_v2");
      writeFileSync(journalPath, JSON.stringify(journal));
      await migratePostgres(pool, schema, folder);
      await pool.query(
        `INSERT INTO timer_schedules (tenant_id, service_call_id, state, due_at, command_ts, registered_at, updated_at, fired_at, completed_at)
         VALUES ('a', 's1', 'Scheduled', 5, 1, 1, 1, NULL, NULL), ('a', 's2', 'Scheduled', 5, 1, 1, 1, NULL, NULL),
                ('a', 'c1', 'Completed', 5, 1, 1, 1, 100, 400), ('b', 'r1', 'Reached', 5, 1, 1, 1, NULL, NULL)`,
      );
      await migratePostgres(pool, schema);
      const stats = await new PostgresTimerQueries(pool).stats("a");
      expect(stats.byState).toMatchObject({ Scheduled: 2, Completed: 1, Reached: 0 });
      expect(stats.avgDurationMs).toBe(300);
      await pool.query("UPDATE timer_schedules SET state = 'Reached' WHERE service_call_id = 's1'");
      const { kept, recounted } = await countsAndRecount(pool);
      expect(kept).toEqual(recounted);
    } finally {
      await pool.end();
      await dropSchema(schema);
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
