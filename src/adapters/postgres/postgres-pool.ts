import pg from "pg";
import { isConnectionFault } from "./connection-fault.js";

/** Where the store's tables live: a plain lower-case identifier, safe to splice into SQL unquoted. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

const INT8_OID = 20;

/**
 * Planner settings of every connection. Each of the store's statements is a walk of one index in
 * its order (claims) or a lookup of a batch's keys by primary key; that is the cheap plan for any
 * table size. But the planner costs plans from statistics that autovacuum refreshes only about a
 * minute after a bulk insert: until then it believes few rows are Scheduled, and chose a bitmap
 * scan that sorted the whole due range for every claim of 100 rows, and hash joins that read every
 * Scheduled row to mark 100 of them (100k timers due at one instant: 0.4–1.1 s per statement, the
 * burst twice as slow). Disabling those plan types only raises their cost, so a statement with no
 * other way still runs. Every execution is planned for the table as it is then: a named statement's
 * generic plan, chosen after five executions while the table was still empty, would keep a sequential
 * scan for good (a batch's key lookup nested over the whole table). See docs/adr/0005.
 */
const PLANNER_SETTINGS = "-c enable_bitmapscan=off -c enable_hashjoin=off -c enable_mergejoin=off -c plan_cache_mode=force_custom_plan";

export interface PostgresPoolOptions {
  /** `postgres://user:pass@host:port/db`; never logged (it may hold a password). */
  readonly url: string;
  /** The schema of the tables; every connection puts it first on its `search_path`. */
  readonly schema: string;
  readonly maxConnections: number;
  /**
   * The longest one connect, pool acquire or statement may take (TIMER_DATABASE_TIMEOUT_MS): enforced
   * by the server (statement_timeout, idle_in_transaction_session_timeout: a stalled instance's row
   * locks are freed) and by the client (query_timeout, which also covers a peer that stopped answering).
   */
  readonly timeoutMs: number;
  /** An idle connection failed (server restart, network): the pool drops it and connects anew. */
  readonly onIdleError: (error: Error) => void;
}

export function assertSchemaName(schema: string): void {
  if (!SCHEMA_NAME.test(schema)) throw new Error(`Postgres schema name must match ${SCHEMA_NAME.source}`);
}

/**
 * A node-postgres pool whose connections resolve unqualified table names in `schema` (the
 * migrations name no schema, so the same SQL serves any schema chosen at run time) and read bigint
 * columns as numbers: every bigint here is an instant or a count, far below 2^53.
 */
export function createPostgresPool(options: PostgresPoolOptions): pg.Pool {
  assertSchemaName(options.schema);
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.maxConnections,
    connectionTimeoutMillis: options.timeoutMs,
    query_timeout: options.timeoutMs,
    statement_timeout: options.timeoutMs,
    idle_in_transaction_session_timeout: options.timeoutMs,
    // Kept open while idle (pg's default closes them after 10 s): a new connection is a new backend
    // process, and its start and the statements it prepares again delayed the first batch after a
    // quiet spell by 100 ms or more on a loaded machine.
    idleTimeoutMillis: 0,
    // Idle pooled connections are probed by TCP, so one whose peer vanished is noticed before use.
    keepAlive: true,
    keepAliveInitialDelayMillis: Math.min(options.timeoutMs, 10_000),
    application_name: "timer-service",
    options: `-c search_path=${options.schema} ${PLANNER_SETTINGS}`,
    types: {
      getTypeParser: ((oid: number, format?: "text" | "binary") =>
        oid === INT8_OID ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // Without a listener an idle connection's error would crash the process.
  pool.on("error", options.onIdleError);
  return pool;
}

/**
 * A connection of the pool for a transaction of several statements. While a client is checked out
 * the pool listens for none of its errors, and node-postgres emits a lost connection (a primary
 * killed, the database's address moved) as an `error` event besides failing the running query: with
 * no listener that event ends the process. The failing query already reports it, so the event is
 * only absorbed here. `release(true)` closes a connection in an unknown state instead of reusing it.
 */
export async function checkOut(pool: pg.Pool): Promise<{ readonly client: pg.PoolClient; release(broken: boolean): void }> {
  const client = await pool.connect();
  const absorb = (): void => {};
  client.on("error", absorb);
  return {
    client,
    release(broken) {
      client.removeListener("error", absorb);
      client.release(broken ? true : undefined);
    },
  };
}

/** Runs `work` in one transaction on one connection of `pool`: committed when it resolves, rolled back when it throws. */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const { client, release } = await checkOut(pool);
  let broken: unknown;
  try {
    // Named, not left to the server's or role's default: a statement after a row lock must see what
    // the lock's previous holder committed (a timer's last history seq, the rows it claimed).
    await client.query("BEGIN ISOLATION LEVEL READ COMMITTED");
    try {
      const result = await work(client);
      await client.query("COMMIT");
      return result;
    } catch (error) {
      // A connection that timed out or broke cannot roll back in time: closing it rolls back.
      if (isConnectionFault(error)) broken = error;
      else
        await client.query("ROLLBACK").catch((rollbackError: unknown) => {
          broken = rollbackError;
        });
      throw error;
    }
  } finally {
    // A connection whose rollback failed is in an unknown state: close it instead of reusing it.
    release(broken !== undefined);
  }
}
