import type pg from "pg";
import { createPostgresPool } from "../../src/adapters/postgres/postgres-pool.js";
import { TEST_DATABASE_URL } from "./test-postgres.js";

/** A node of `EXPLAIN (FORMAT JSON)`. */
export interface PlanNode {
  readonly "Node Type": string;
  readonly "Relation Name"?: string;
  readonly "Index Name"?: string;
  readonly Plans?: readonly PlanNode[];
}

/** The plan and every node below it. */
export function planNodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(planNodes)];
}

/** Every scan of timer_schedules, as "Node Type[ index]". */
export function scansOfTimers(plan: PlanNode): string[] {
  return planNodes(plan)
    .filter((node) => node["Relation Name"] === "timer_schedules" && node["Node Type"].endsWith("Scan"))
    .map((node) => [node["Node Type"], node["Index Name"]].filter(Boolean).join(" "));
}

/** The plan of `text` for `values` (a plain statement, or an `EXECUTE` with no `values`). */
export async function explain(on: pg.Pool, text: string, values: unknown[] = []): Promise<PlanNode> {
  const { rows } = await on.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>({ text: `EXPLAIN (FORMAT JSON) ${text}`, values });
  return rows[0]!["QUERY PLAN"][0].Plan;
}

/**
 * One connection with the store's own settings on `schema` (a store has migrated it), so that the
 * plans seen are the store's; autovacuum is turned off for the table, so its statistics stay what
 * the test makes them.
 */
export async function planningPool(schema: string, timeoutMs: number): Promise<pg.Pool> {
  const pool = createPostgresPool({ url: TEST_DATABASE_URL, schema, maxConnections: 1, timeoutMs, onIdleError: () => {} });
  await pool.query("ALTER TABLE timer_schedules SET (autovacuum_enabled = false)");
  return pool;
}
