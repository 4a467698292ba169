import { randomBytes } from "node:crypto";
import pg from "pg";

/** The Postgres the tests use: the machine's (trust auth), or TIMER_TEST_DATABASE_URL. */
export const TEST_DATABASE_URL = process.env.TIMER_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/**
 * Which store the service processes of the integration and fault tests use: SQLite unless
 * TEST_TIMER_STORE=postgres, which runs the same suites against Postgres (CI runs both).
 */
export const TEST_STORE = process.env.TEST_TIMER_STORE === "postgres" ? "postgres" : "sqlite";

/** A schema name no other test uses (each test drops its own). */
export function uniqueSchema(label: string): string {
  return `${label}_${process.pid}_${randomBytes(4).toString("hex")}`;
}

export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}
