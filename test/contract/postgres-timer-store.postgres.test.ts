import { afterAll } from "vitest";
import { openPostgresTimerStore, type PostgresTimerStore } from "../../src/adapters/postgres/postgres-timer-store.js";
import { dropSchema, schemaSeries, TEST_DATABASE_URL } from "../support/test-postgres.js";
import { describeDurableTimerStoreContract, describeSharedTimerStoreContract, describeTimerStoreContract } from "./timer-store.contract.js";

const schemas = schemaSeries("contract");
afterAll(() => schemas.dropAll());

const open = async () => {
  const schema = schemas.next();
  const connect = () => openPostgresTimerStore({ url: TEST_DATABASE_URL, schema, maxConnections: 2 });
  const opened: PostgresTimerStore[] = [await connect()];
  const reopen = async () => {
    const reopened = await connect();
    opened.push(reopened);
    return reopened;
  };
  const cleanup = async () => {
    for (const each of opened) await each.close();
    await dropSchema(schema);
  };
  return { store: opened[0]!, reopen, cleanup };
};

describeTimerStoreContract("PostgresTimerStore", open);
describeDurableTimerStoreContract("PostgresTimerStore", open);
describeSharedTimerStoreContract("PostgresTimerStore", open);
