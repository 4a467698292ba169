/**
 * The statements of PostgresTimerStore. Table names are unqualified: each connection's search_path
 * names the store's schema. Key columns are `COLLATE "C"`, so every comparison and ORDER BY on them
 * is by code point and the partial index `timer_schedules_due_idx` serves the due queries. Queries
 * of Scheduled timers spell `state = 'Scheduled'` literally so that the planner matches that index.
 */

// Aliased to the field names of Timer, so a row is a Timer without mapping.
const TIMER_COLUMNS = `
  tenant_id AS "tenantId", service_call_id AS "serviceCallId", state, due_at AS "dueAtMs", data,
  correlation_id AS "correlationId", command_ts AS "commandTs", generation, registered_at AS "registeredAtMs",
  reached_at AS "reachedAtMs", updated_at AS "updatedAtMs"`;

export const SELECT_BY_KEY = `SELECT ${TIMER_COLUMNS} FROM timer_schedules WHERE tenant_id = $1 AND service_call_id = $2`;

/**
 * The current rows of a batch's keys ($1 tenants, $2 serviceCallIds), locked until the transaction
 * ends, in key order so that two batches sharing keys lock them in the same order.
 */
export const SELECT_FOR_UPDATE = `
  SELECT ${TIMER_COLUMNS} FROM timer_schedules
  WHERE (tenant_id, service_call_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))
  ORDER BY tenant_id, service_call_id
  FOR UPDATE`;

/**
 * Stores a batch's decisions, one row per key: updates the rows the batch read (and locked), and
 * inserts the others. An insert that meets a row another transaction inserted meanwhile is skipped;
 * the caller compares the counts and runs the batch again. A claim survives only while the timer
 * stays Scheduled at the same due time (so a claim implies due_at <= the time it was taken).
 */
export const UPSERT_DECISIONS = `
  WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[],
      $7::bigint[], $8::integer[], $9::bigint[], $10::bigint[], $11::bigint[], $12::boolean[])
      AS i(tenant_id, service_call_id, state, due_at, data, correlation_id, command_ts, generation,
        registered_at, reached_at, updated_at, existed)
  ), updated AS (
    UPDATE timer_schedules t SET
      state = i.state, due_at = i.due_at, data = i.data, correlation_id = i.correlation_id,
      command_ts = i.command_ts, generation = i.generation, registered_at = i.registered_at,
      reached_at = i.reached_at, updated_at = i.updated_at,
      claimed_by = CASE WHEN i.state = 'Scheduled' AND i.due_at = t.due_at THEN t.claimed_by END,
      claimed_until = CASE WHEN i.state = 'Scheduled' AND i.due_at = t.due_at THEN t.claimed_until END
    FROM input i
    WHERE i.existed AND t.tenant_id = i.tenant_id AND t.service_call_id = i.service_call_id
    RETURNING 1
  ), inserted AS (
    INSERT INTO timer_schedules (tenant_id, service_call_id, state, due_at, data, correlation_id,
      command_ts, generation, registered_at, reached_at, updated_at)
    SELECT tenant_id, service_call_id, state, due_at, data, correlation_id,
      command_ts, generation, registered_at, reached_at, updated_at
    FROM input WHERE NOT existed
    ON CONFLICT (tenant_id, service_call_id) DO NOTHING
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM updated) + (SELECT count(*) FROM inserted) AS written`;

const CLAIMABLE = `
  state = 'Scheduled' AND due_at <= $3
  AND (claimed_until IS NULL OR claimed_until <= $3 OR claimed_by = $1)`;

function claimDue(afterCursor: string): string {
  return `
  WITH picked AS MATERIALIZED (
    SELECT tenant_id, service_call_id FROM timer_schedules
    WHERE ${CLAIMABLE} ${afterCursor}
    ORDER BY due_at, tenant_id, service_call_id
    LIMIT $4
    FOR UPDATE SKIP LOCKED
  ), claimed AS (
    UPDATE timer_schedules t SET claimed_by = $1, claimed_until = $2
    FROM picked p
    WHERE t.tenant_id = p.tenant_id AND t.service_call_id = p.service_call_id
    RETURNING t.tenant_id, t.service_call_id, t.due_at, t.generation, t.data, t.correlation_id
  )
  SELECT tenant_id AS "tenantId", service_call_id AS "serviceCallId", due_at AS "dueAtMs", generation, data,
    correlation_id AS "correlationId"
  FROM claimed
  ORDER BY due_at, tenant_id, service_call_id`;
}

/**
 * Claims due timers: $1 owner, $2 lease until, $3 now, $4 limit. Rows another transaction holds
 * locked (a batch changing them, another instance claiming them) are skipped, not waited for; a
 * row changed meanwhile is checked again on its newest version. `picked` is evaluated exactly once
 * (MATERIALIZED), so no rescan can lock more than `limit` rows. RETURNING has no order, hence the
 * outer ORDER BY.
 */
export const CLAIM_DUE = claimDue("");

/** As CLAIM_DUE, only after the keyset cursor ($5 dueAt, $6 tenant, $7 serviceCallId). */
export const CLAIM_DUE_AFTER = claimDue("AND (due_at, tenant_id, service_call_id) > ($5::bigint, $6::text, $7::text)");

/**
 * Marks a batch Reached at $5 for owner $6: each firing ($1 tenants, $2 serviceCallIds, $3 dueAts,
 * $4 generations) only while the timer is the version that was published and no other owner holds a
 * live claim on it.
 */
export const MARK_REACHED = `
  UPDATE timer_schedules t
  SET state = 'Reached', reached_at = $5, updated_at = $5, claimed_by = NULL, claimed_until = NULL
  FROM unnest($1::text[], $2::text[], $3::bigint[], $4::integer[]) AS i(tenant_id, service_call_id, due_at, generation)
  WHERE t.tenant_id = i.tenant_id AND t.service_call_id = i.service_call_id
    AND t.state = 'Scheduled' AND t.due_at = i.due_at AND t.generation = i.generation
    AND (t.claimed_by IS NULL OR t.claimed_by = $6 OR t.claimed_until <= $5)
  RETURNING t.tenant_id AS "tenantId", t.service_call_id AS "serviceCallId"`;

/**
 * Drops owner $1's claims on Scheduled timers due at or before $2. Claims exist only on such rows
 * (a mark or a change of due time clears them), so the partial due index bounds the scan.
 */
export const RELEASE_ALL_CLAIMS = `
  UPDATE timer_schedules SET claimed_by = NULL, claimed_until = NULL
  WHERE state = 'Scheduled' AND due_at <= $2 AND claimed_by = $1`;

/** Drops owner $1's claims on the keys $2 tenants, $3 serviceCallIds. */
export const RELEASE_CLAIMS = `
  UPDATE timer_schedules SET claimed_by = NULL, claimed_until = NULL
  WHERE claimed_by = $1
    AND (tenant_id, service_call_id) IN (SELECT * FROM unnest($2::text[], $3::text[]))`;

export const NEXT_DUE_AT = `SELECT min(due_at) AS "dueAtMs" FROM timer_schedules WHERE state = 'Scheduled'`;

export const COUNT_SCHEDULED = `SELECT count(*) AS count FROM timer_schedules WHERE state = 'Scheduled'`;
