import { randomBytes } from "node:crypto";
import pg from "pg";

/** The machine's Postgres (trust auth), used unless TIMER_TEST_DATABASE_URL names another. */
export const LOCAL_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/test";

/** The Postgres the tests use: the machine's, or TIMER_TEST_DATABASE_URL. */
export const TEST_DATABASE_URL = process.env.TIMER_TEST_DATABASE_URL || LOCAL_DATABASE_URL;

/**
 * Which store the service processes of the integration and fault tests use: SQLite unless
 * TEST_TIMER_STORE=postgres, which runs the same suites against Postgres (CI runs both).
 */
export const TEST_STORE = process.env.TEST_TIMER_STORE === "postgres" ? "postgres" : "sqlite";

/** A schema name no other test uses (each test drops its own). */
export function uniqueSchema(label: string): string {
  return `${label}_${process.pid}_${randomBytes(4).toString("hex")}`;
}

async function withClient<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export async function dropSchema(schema: string): Promise<void> {
  await withClient((client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
}

/** Drops every schema whose name starts with `prefix`: the leftovers of tests that failed before their cleanup. */
export async function dropSchemasStartingWith(prefix: string): Promise<void> {
  await withClient(async (client) => {
    const { rows } = await client.query<{ name: string }>("SELECT nspname AS name FROM pg_namespace WHERE starts_with(nspname, $1)", [
      prefix,
    ]);
    for (const { name } of rows) await client.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  });
}

/**
 * Schemas for the tests of one file: `next()` names a fresh one, `dropAll()` drops every one it
 * named (for an `afterAll`, so that a failed test leaves nothing behind).
 */
export function schemaSeries(label: string): { next(): string; dropAll(): Promise<void> } {
  const prefix = uniqueSchema(label);
  let count = 0;
  return {
    next: () => `${prefix}_${++count}`,
    dropAll: () => dropSchemasStartingWith(`${prefix}_`),
  };
}
