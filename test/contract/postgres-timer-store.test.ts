import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll } from "vitest";
import { openPostgresTimerStore, type PostgresTimerStore } from "../../src/adapters/postgres/postgres-timer-store.js";
import { describeTimerStoreContract } from "./timer-store.contract.js";

// The machine's Postgres (trust auth); each test gets a schema of its own and drops it.
const DATABASE_URL = process.env.TIMER_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const FILE_PREFIX = `contract_${randomBytes(4).toString("hex")}`;
let schemas = 0;

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

describeTimerStoreContract("PostgresTimerStore", async () => {
  const schema = `${FILE_PREFIX}_${++schemas}`;
  const open = () => openPostgresTimerStore({ url: DATABASE_URL, schema, maxConnections: 2 });
  const opened: PostgresTimerStore[] = [await open()];
  const reopen = async () => {
    const reopened = await open();
    opened.push(reopened);
    return reopened;
  };
  const cleanup = async () => {
    for (const each of opened) await each.close();
    await dropSchema(schema);
  };
  return { store: opened[0]!, reopen, cleanup, recordsClaims: true };
});

afterAll(async () => {
  // Leftovers of a test that failed before its cleanup.
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>("SELECT nspname AS name FROM pg_namespace WHERE nspname LIKE $1", [`${FILE_PREFIX}%`]);
    for (const { name } of rows) await client.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
  } finally {
    await client.end();
  }
});
