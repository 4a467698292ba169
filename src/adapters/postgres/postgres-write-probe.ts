import type pg from "pg";
import { checkOut } from "./postgres-pool.js";

/**
 * The Postgres health check that readiness follows: one transaction that writes a row and deletes
 * it again (`timer_health_checks`, drizzle/postgres/0008), so it passes only where a write commits
 * (CONTRACT §16, §18).
 *
 * A `SELECT 1` is answered by a database that cannot finish a commit: a primary that still names a
 * synchronous standby it no longer has (a promoted standby with the old primary's settings, or a
 * primary whose standby died) answers every read and waits forever in every COMMIT that wrote WAL;
 * a hot standby behind the address refuses every write. A transaction id alone writes no WAL and
 * does not wait. The row is the backend's own (its pid), so checks of several instances never
 * wait for each other's row locks, and the table stays empty.
 *
 * The server's `statement_timeout` is raised for this transaction: a statement time-out during the
 * wait for a synchronous standby only cancels the wait and reports the commit as done (with a
 * warning), which would make a check that should fail pass. The client's deadline (the caller's and
 * the pool's `query_timeout`) ends it first; the connection is then closed, never reused.
 */
export async function checkWritable(pool: pg.Pool, timeoutMs: number): Promise<void> {
  const { client, release } = await checkOut(pool);
  let broken = false;
  try {
    await client.query("BEGIN");
    await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.trunc(timeoutMs)) * 3}`);
    await client.query({
      name: "timer-health-check-write",
      text: "INSERT INTO timer_health_checks (checked_by, checked_at) VALUES (pg_backend_pid(), $1)",
      values: [Date.now()],
    });
    await client.query({ name: "timer-health-check-delete", text: "DELETE FROM timer_health_checks WHERE checked_by = pg_backend_pid()" });
    await client.query("COMMIT");
  } catch (error) {
    broken = true;
    throw error;
  } finally {
    release(broken);
  }
}
