import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgresTimerStore, type PostgresTimerStore } from "../../src/adapters/postgres/postgres-timer-store.js";
import * as q from "../../src/adapters/postgres/timer-schedules.sql.js";
import { APPEND_HISTORY, DELETE_HISTORIES } from "../../src/adapters/postgres/postgres-timer-history.js";
import type { DecideRules } from "../../src/app/command-batch.js";
import type { KeyCommand } from "../../src/domain/timer-command.js";
import { dropSchema, TEST_DATABASE_URL, uniqueSchema } from "../support/test-postgres.js";
import { explain, planNodes, planningPool, scansOfTimers, type PlanNode } from "../support/postgres-plans.js";

// The plans the store's hot statements get right after a bulk insert, before autovacuum has
// analyzed the table: the moment a burst of timers all due at once meets statistics that say no
// timer is Scheduled. Custom and generic plans both. Kept off: autovacuum, so the statistics stay as stale as in that moment.
const SCHEMA = uniqueSchema("plans");
const NOW = 1_764_108_000_000;
const TIMERS = 20_000;
const BATCH = 100;
const decide: DecideRules = { nowMs: NOW };

let store: PostgresTimerStore;
let pool: pg.Pool;

/**
 * The plans of `text` for `values`: the custom plan, and the generic one that a named prepared
 * statement (as the store uses) may switch to after five executions.
 */
async function plans(text: string, values: unknown[]): Promise<PlanNode[]> {
  const found: PlanNode[] = [];
  for (const mode of ["force_custom_plan", "force_generic_plan"]) {
    await pool.query(`SET plan_cache_mode = ${mode}`);
    found.push(await explain(pool, text, values));
  }
  return found;
}

const keys = Array.from({ length: BATCH }, (_, i) => `call-${String(i * 97).padStart(6, "0")}`);

beforeAll(async () => {
  store = await openPostgresTimerStore({ url: TEST_DATABASE_URL, schema: SCHEMA, maxConnections: 2 });
  pool = await planningPool(SCHEMA, 5_000);
  const commands: KeyCommand[] = Array.from({ length: TIMERS }, (_, i) => ({
    kind: "schedule",
    tenantId: "acme",
    serviceCallId: `call-${String(i).padStart(6, "0")}`,
    dueAtMs: NOW,
    data: null,
    correlationId: null,
    timestampMs: 1,
  }));
  // Statistics taken while the table held only Reached timers, then the bulk insert. More of them
  // than the burst: the store refreshes the statistics itself once the table has doubled.
  const past = NOW - 60_000;
  await pool.query(
    `INSERT INTO timer_schedules (tenant_id, service_call_id, state, due_at, command_ts, registered_at, reached_at, updated_at)
     SELECT 'acme', 'old-' || g, 'Reached', ${past}, 1, ${past}, ${past}, ${past} FROM generate_series(1, ${TIMERS + 1_000}) g`,
  );
  await pool.query("ANALYZE timer_schedules");
  // The histories likewise: analyzed while empty, then three entries per timer.
  await pool.query("ALTER TABLE timer_history SET (autovacuum_enabled = false)");
  await pool.query("ANALYZE timer_history");
  for (let i = 0; i < commands.length; i += 5_000) await store.applyCommands(commands.slice(i, i + 5_000), decide);
  await pool.query(
    `INSERT INTO timer_history (tenant_id, service_call_id, seq, entry)
     SELECT tenant_id, service_call_id, s, '{"at":"x"}' FROM timer_schedules, generate_series(1, 3) s`,
  );
}, 60_000);

afterAll(async () => {
  await pool?.end();
  await store?.close();
  await dropSchema(SCHEMA);
});

describe("Postgres plans with statistics older than a bulk insert", () => {
  it("when every timer is due, then a claim walks each candidate tenant's due range in order instead of sorting it", async () => {
    const claim = [`owner-a`, NOW + 30_000, NOW, BATCH, ["acme"]];

    const first = await plans(q.CLAIM_DUE_FAIR, [...claim, [], [], [], BATCH]);
    const after = await plans(q.CLAIM_DUE_FAIR, [...claim, ["acme"], [NOW], ["call-010000"], BATCH]);

    for (const claimPlan of [...first, ...after]) {
      expect(scansOfTimers(claimPlan)).toContain("Index Scan timer_schedules_tenant_state_due_idx");
      expect(scansOfTimers(claimPlan).filter((scan) => !scan.startsWith("Index Scan") && !scan.startsWith("Index Only Scan"))).toEqual([]);
      expect(scansOfTimers(claimPlan)).not.toContain("Index Scan timer_schedules_due_idx");
    }
    for (const raisePlan of await plans(q.RAISE_DUE_TENANTS, [["acme"]])) {
      expect(scansOfTimers(raisePlan).every((scan) => scan.includes("timer_schedules_tenant_state_due_idx"))).toBe(true);
    }
  });

  it("when the next due time is read or an instance gives up all its claims, then only the due tenants' ranges are read, through the tenant index", async () => {
    for (const plan of await plans(q.NEXT_DUE_AT, [])) {
      expect(scansOfTimers(plan)).toEqual(["Index Only Scan timer_schedules_tenant_state_due_idx"]);
    }
    for (const plan of await plans(q.RELEASE_ALL_CLAIMS, ["owner-a", NOW])) {
      expect(scansOfTimers(plan)).toEqual([
        "Index Scan timer_schedules_tenant_state_due_idx",
        "Index Scan timer_schedules_tenant_id_service_call_id_pk",
      ]);
    }
  });

  it("when a batch of firings or deadlines is recorded, a batch's keys are locked or its claims released, then the rows are found by primary key, not by reading every Scheduled row", async () => {
    const n = keys.length;
    const firings = [
      "owner-a",
      keys.map(() => "acme"),
      keys,
      keys.map(() => NOW),
      keys.map(() => 1),
      keys.map(() => "Reached"),
      keys.map(() => NOW),
      keys.map(() => 0),
      keys.map(() => NOW),
      keys.map(() => 1),
      keys.map(() => NOW),
      new Array(n).fill(null),
      new Array(n).fill(null),
      new Array(n).fill(null),
    ];

    const record = await plans(q.RECORD_FIRINGS, firings);
    const lock = await plans(q.SELECT_FOR_UPDATE, [keys.map(() => "acme"), keys]);
    const deadlines = await plans(q.RECORD_DEADLINES, [
      "owner-a",
      keys.map(() => "acme"),
      keys,
      keys.map(() => 1),
      keys.map(() => NOW),
      keys.map(() => "Fired"),
      keys.map(() => 2),
      keys.map(() => NOW),
      keys.map(() => NOW + 60_000),
      keys.map(() => "timeout"),
      keys.map(() => NOW),
    ]);

    const release = await plans(q.RELEASE_CLAIMS, ["owner-a", keys.map(() => "acme"), keys]);

    for (const batchPlan of [...record, ...lock, ...deadlines, ...release]) {
      const joins = planNodes(batchPlan).filter((node) => node["Node Type"].endsWith("Join") || node["Node Type"] === "Nested Loop");
      expect(joins.map((node) => node["Node Type"]).filter((type) => type !== "Nested Loop")).toEqual([]);
      expect(scansOfTimers(batchPlan).filter((scan) => !scan.endsWith("_pk"))).toEqual([]);
    }
  });

  it("when a batch's history entries are appended or a batch's histories deleted, then each timer's entries are found by primary key", async () => {
    const tenants = keys.map(() => "acme");
    const append = await plans(APPEND_HISTORY, [tenants, keys, keys.map(() => '{"at":"y"}'), 3]);
    const remove = await plans(DELETE_HISTORIES, [tenants, keys]);

    for (const plan of [...append, ...remove]) {
      const scans = planNodes(plan)
        .filter((node) => node["Relation Name"] === "timer_history" && node["Node Type"].endsWith("Scan"))
        .map((node) => [node["Node Type"], node["Index Name"]].filter(Boolean).join(" "));
      expect(scans.length).toBeGreaterThan(0);
      expect(scans.filter((scan) => !scan.endsWith("_pk"))).toEqual([]);
    }
  });
});
