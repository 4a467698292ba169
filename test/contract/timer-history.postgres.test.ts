import { afterAll } from "vitest";
import { openPostgresTimerStore } from "../../src/adapters/postgres/postgres-timer-store.js";
import { createPostgresPool } from "../../src/adapters/postgres/postgres-pool.js";
import { PostgresTimerQueries } from "../../src/adapters/postgres/postgres-timer-queries.js";
import { PostgresTimerRetention } from "../../src/adapters/postgres/postgres-timer-retention.js";
import { dropSchema, schemaSeries, TEST_DATABASE_URL } from "../support/test-postgres.js";
import { describeTimerHistoryContract } from "./timer-history.contract.js";

const schemas = schemaSeries("history");
afterAll(() => schemas.dropAll());

describeTimerHistoryContract("PostgresTimerStore", async () => {
  const schema = schemas.next();
  const store = await openPostgresTimerStore({ url: TEST_DATABASE_URL, schema, maxConnections: 2 });
  const pool = createPostgresPool({ url: TEST_DATABASE_URL, schema, maxConnections: 2, timeoutMs: 5_000, onIdleError: () => {} });
  return {
    store,
    queries: new PostgresTimerQueries(pool),
    retention: new PostgresTimerRetention(pool),
    cleanup: async () => {
      await pool.end();
      await store.close();
      await dropSchema(schema);
    },
  };
});
