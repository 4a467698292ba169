import { infrastructurePath, startPostgres, type PostgresServer } from "./test-infrastructure.js";

/**
 * Vitest global setup: on the containers path, one Postgres container for the whole run, published
 * to the test files as TIMER_TEST_DATABASE_URL (workers start after this and inherit it), removed
 * at the end. On the local path, or when TIMER_TEST_DATABASE_URL is set, it does nothing.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (infrastructurePath() !== "containers") return undefined;
  if (process.env.TIMER_TEST_DATABASE_URL) return undefined;
  const started = Date.now();
  const postgres: PostgresServer = await startPostgres();
  process.env.TIMER_TEST_DATABASE_URL = postgres.url;
  console.info(`test infrastructure: Postgres container at ${postgres.url} (${Date.now() - started} ms)`);
  return async () => {
    await postgres.dispose();
  };
}
