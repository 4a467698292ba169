import { fileURLToPath } from "node:url";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import type pg from "pg";

// src/adapters/postgres/ and dist/adapters/postgres/ are both three levels below the package root.
export const DEFAULT_POSTGRES_MIGRATIONS_FOLDER = fileURLToPath(new URL("../../../drizzle/postgres", import.meta.url));

/**
 * Creates `schema` when missing and applies drizzle-kit's migrations to it, recording them in
 * `schema.__drizzle_migrations`. Instances starting at once against one database take turns on a
 * session advisory lock (one per schema), so each migration runs once and the others find it done;
 * the lock goes with the connection should the process die meanwhile.
 */
export async function migratePostgres(pool: pg.Pool, schema: string, migrationsFolder = DEFAULT_POSTGRES_MIGRATIONS_FOLDER): Promise<void> {
  const client = await pool.connect();
  let failure: unknown;
  try {
    // The two-int form keeps this lock apart from any single-bigint advisory lock.
    await client.query("SELECT pg_advisory_lock(hashtext('timer-service:migrate'), hashtext($1))", [schema]);
    try {
      // Migrations name no schema: search_path (set per connection by the pool) puts the tables here.
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await migrate(drizzle({ client }), { migrationsFolder, migrationsSchema: schema, migrationsTable: "__drizzle_migrations" });
    } finally {
      await client.query("SELECT pg_advisory_unlock(hashtext('timer-service:migrate'), hashtext($1))", [schema]);
    }
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    // A connection that failed mid-way is closed rather than reused (it may still hold the lock).
    client.release(failure === undefined ? undefined : true);
  }
}
