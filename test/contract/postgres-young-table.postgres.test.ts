import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { openPostgresTimerStore, type PostgresTimerStore } from "../../src/adapters/postgres/postgres-timer-store.js";
import * as q from "../../src/adapters/postgres/timer-schedules.sql.js";
import type { KeyCommand } from "../../src/domain/timer-command.js";
import { dropSchema, TEST_DATABASE_URL, uniqueSchema } from "../support/test-postgres.js";
import { explain, planningPool, scansOfTimers } from "../support/postgres-plans.js";

// A store that starts on an empty table and then takes a flood: its statements are first planned
// while the table has no rows and no statistics, and must not keep the plans that suited it then.
// Autovacuum is off, as it is for the first minute of a real flood.
const SCHEMA = uniqueSchema("plancache");
const GROWING = uniqueSchema("growing");
const NOW = 1_764_108_000_000;
const NAME = "timer-select-for-update";

function schedule(serviceCallId: string, tenantId = "acme"): KeyCommand {
  return { kind: "schedule", tenantId, serviceCallId, dueAtMs: NOW + 3_600_000, data: null, correlationId: null, timestampMs: 1 };
}

let store: PostgresTimerStore;
let pool: pg.Pool;
let growing: PostgresTimerStore;
let growingPool: pg.Pool;

beforeAll(async () => {
  store = await openPostgresTimerStore({ url: TEST_DATABASE_URL, schema: SCHEMA, maxConnections: 1 });
  // One connection, so that its prepared statements are seen.
  pool = await planningPool(SCHEMA, 10_000);
  await pool.query("ANALYZE timer_schedules");

  growing = await openPostgresTimerStore({ url: TEST_DATABASE_URL, schema: GROWING, maxConnections: 2 });
  growingPool = await planningPool(GROWING, 10_000);
}, 60_000);

afterAll(async () => {
  await pool?.end();
  await store?.close();
  await growingPool?.end();
  await growing?.close();
  await dropSchema(SCHEMA);
  await dropSchema(GROWING);
});

describe("Postgres plans of a store that started empty", () => {
  it("when a batch statement ran many times on the empty table and then the table filled, then a batch still finds its keys by primary key", async () => {
    const keys = ["a", "b", "c"];
    const lock = { name: NAME, text: q.SELECT_FOR_UPDATE, values: [keys.map(() => "acme"), keys] };
    for (let i = 0; i < 8; i++) await pool.query(lock);
    // The store's own batches too, on the still empty table.
    for (let i = 0; i < 8; i++) await store.applyCommands([schedule(`early-${i}`)], { nowMs: NOW });

    await pool.query(
      `INSERT INTO timer_schedules (tenant_id, service_call_id, state, due_at, command_ts, registered_at, updated_at)
       SELECT 'flood', 'k' || g, 'Scheduled', ${NOW + 3_600_000}, 1, 1, 1 FROM generate_series(1, 20000) g`,
    );
    await pool.query(lock);

    const { rows: prepared } = await pool.query<{ generic_plans: string; custom_plans: string }>(
      "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1",
      [NAME],
    );
    expect(prepared).toEqual([{ generic_plans: 0, custom_plans: 9 }]);
    // EXECUTE takes no bind parameters: the keys as array literals.
    const plan = await explain(pool, `EXECUTE "${NAME}"('{acme,acme,acme}', '{${keys.join(",")}}')`);
    expect(scansOfTimers(plan)).toEqual(["Index Scan timer_schedules_tenant_id_service_call_id_pk"]);
  });
});

describe("Postgres statistics of a store that started empty", () => {
  it("when one tenant's flood fills the table, then the store refreshes the statistics and a batch's keys are found by primary key", async () => {
    const analyzedAt = async () =>
      (
        await growingPool.query<{ at: Date | null }>(
          "SELECT last_analyze AS at FROM pg_stat_user_tables WHERE relid = 'timer_schedules'::regclass",
        )
      ).rows[0]?.at ?? null;
    expect(await analyzedAt()).toBeNull();

    for (let batch = 0; batch < 3; batch++) {
      await growing.applyCommands(
        Array.from({ length: 1_000 }, (_, i) => schedule(`a-${batch * 1_000 + i}`, "flood")),
        { nowMs: NOW },
      );
    }

    await vi.waitFor(async () => expect(await analyzedAt()).not.toBeNull(), { timeout: 10_000, interval: 50 });
    const keys = Array.from({ length: 500 }, (_, i) => `a-${10_000 + i}`);
    const plan = await explain(growingPool, q.SELECT_FOR_UPDATE, [keys.map(() => "flood"), keys]);
    expect(scansOfTimers(plan)).toEqual(["Index Scan timer_schedules_tenant_id_service_call_id_pk"]);
  });
});
