import type pg from "pg";

/**
 * The Postgres health check that readiness follows: one transaction that takes a transaction id
 * and commits, so it passes only where a write would (CONTRACT §16, §18).
 *
 * A `SELECT 1` is answered by a database that cannot finish a commit: a promoted standby that
 * still names a synchronous standby it no longer has answers every read and waits forever in every
 * COMMIT, and a hot standby behind the address refuses every write. `txid_current()` writes a
 * commit record, so its COMMIT waits for the synchronous standbys like any write; on a standby it
 * fails at once (no transaction ids during recovery). It costs one transaction id per check (one
 * every 2 s per instance: wraparound is billions away and vacuum freezes them anyway).
 *
 * The server's own `statement_timeout` is raised for this transaction: a statement time-out during
 * the wait for a synchronous standby only cancels the wait and reports the commit as done (with a
 * warning), which would make a check that should fail pass. The client's deadline (the caller's,
 * and the pool's `query_timeout`) ends it first; the connection is then closed, never reused.
 */
export async function checkWritable(pool: pg.Pool, timeoutMs: number): Promise<void> {
  const client = await pool.connect();
  let broken: unknown;
  try {
    await client.query("BEGIN");
    await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.trunc(timeoutMs)) * 3}`);
    await client.query("SELECT txid_current()");
    await client.query("COMMIT");
  } catch (error) {
    broken = error;
    throw error;
  } finally {
    client.release(broken === undefined ? undefined : true);
  }
}
