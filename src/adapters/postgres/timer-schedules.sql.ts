import type { Timer } from "../../domain/timer.js";
import { TIMER_COLUMNS, TIMER_COLUMN_NAMES, TIMER_VALUE_COLUMNS, timerSelectList } from "../storage/timer-columns.js";

/**
 * The statements of PostgresTimerStore. Table names are unqualified: each connection's search_path
 * names the store's schema. Key columns are `COLLATE "C"`, so every comparison and ORDER BY on them
 * is by code point. Due timers are found tenant by tenant, through `timer_due_tenants` and each
 * tenant's range of `timer_schedules_tenant_state_due_idx`.
 */

// Aliased to the field names of Timer, so a row is a Timer but for the text of `repeat` and `delivery`.
const TIMER_SELECT = timerSelectList({ quote: true });

/** The parameters of an unnested write: one array per column, in TIMER_COLUMNS order (types: ARRAY_TYPES). */
export function timerColumnArrays(timers: readonly Timer[]): unknown[][] {
  return TIMER_COLUMNS.map(({ value }) => timers.map(value));
}

/** The Postgres type of each column's array parameter (UPSERT_DECISIONS, the import). */
export const ARRAY_TYPES: Readonly<Record<string, string>> = {
  tenant_id: "text[]",
  service_call_id: "text[]",
  state: "text[]",
  due_at: "bigint[]",
  data: "text[]",
  correlation_id: "text[]",
  command_ts: "bigint[]",
  generation: "integer[]",
  registered_at: "bigint[]",
  reached_at: "bigint[]",
  updated_at: "bigint[]",
  repeat: "text[]",
  occurrence: "bigint[]",
  max_lateness_ms: "bigint[]",
  delivery: "text[]",
  created_by: "text[]",
  created_via: "text[]",
  attempt: "integer[]",
  fired_at: "bigint[]",
  completed_at: "bigint[]",
  result: "text[]",
  last_reason: "text[]",
  deadline_at: "bigint[]",
  trace_id: "text[]",
  trace_flags: "integer[]",
  trace_state: "text[]",
  trace_span_id: "text[]",
};

/** The trace members of a timer (CONTRACT §13), as its events need them. */
const TRACE_SELECT = timerSelectList({ quote: true, only: ["traceId", "traceFlags", "traceState", "traceSpanId"] });

/** `$1::text[], $2::text[], …`: one array per column of TIMER_COLUMNS, then `existed`. */
const UPSERT_PARAMETERS = [...TIMER_COLUMNS.map(({ column }) => ARRAY_TYPES[column]!), "boolean[]"]
  .map((type, i) => `$${i + 1}::${type}`)
  .join(", ");

export const SELECT_BY_KEY = `SELECT ${TIMER_SELECT} FROM timer_schedules WHERE tenant_id = $1 AND service_call_id = $2`;

/**
 * The current rows of a batch's keys ($1 tenants, $2 serviceCallIds), locked until the transaction
 * ends, in key order so that two batches sharing keys lock them in the same order.
 */
export const SELECT_FOR_UPDATE = `
  SELECT ${TIMER_SELECT} FROM timer_schedules
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
    SELECT * FROM unnest(${UPSERT_PARAMETERS}) AS i(${TIMER_COLUMN_NAMES}, existed)
  ), updated AS (
    UPDATE timer_schedules t SET
      ${TIMER_VALUE_COLUMNS.map((column) => `${column} = i.${column}`).join(", ")},
      claimed_by = CASE WHEN i.state = 'Scheduled' AND i.due_at = t.due_at THEN t.claimed_by END,
      claimed_until = CASE WHEN i.state = 'Scheduled' AND i.due_at = t.due_at THEN t.claimed_until END
    FROM input i
    WHERE i.existed AND t.tenant_id = i.tenant_id AND t.service_call_id = i.service_call_id
    RETURNING 1
  ), inserted AS (
    INSERT INTO timer_schedules (${TIMER_COLUMN_NAMES})
    SELECT ${TIMER_COLUMN_NAMES} FROM input WHERE NOT existed
    ON CONFLICT (tenant_id, service_call_id) DO NOTHING
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM updated) + (SELECT count(*) FROM inserted) AS written`;

/**
 * The newest recorded prefix cancel matching row `c`'s key: a tenant has few prefix cancels (retention
 * removes them), and every prefix of a key sorts at or before the key.
 */
const PREFIX_CANCEL_TS = `(
  SELECT max(p.command_ts) FROM timer_prefix_cancels p
  WHERE p.tenant_id = c.tenant_id AND p.service_call_id_prefix <= c.service_call_id
    AND starts_with(c.service_call_id, p.service_call_id_prefix))`;

/** Rows nobody else holds a live claim on ($1 owner, $3 now). */
const UNCLAIMED = "(claimed_until IS NULL OR claimed_until <= $3 OR claimed_by = $1)";

/**
 * The CTEs `picked` (at most $4 rows matching `where` in `orderBy`, locked, rows locked by others
 * skipped) and `claimed` (those rows, now claimed by $1 until $2, with the `returning` columns).
 */
function claimRows(where: string, orderBy: string, returning: string): string {
  return `
  WITH picked AS MATERIALIZED (
    SELECT tenant_id, service_call_id FROM timer_schedules
    WHERE ${where} AND ${UNCLAIMED}
    ORDER BY ${orderBy}
    LIMIT $4
    FOR UPDATE SKIP LOCKED
  ), claimed AS (
    UPDATE timer_schedules t SET claimed_by = $1, claimed_until = $2
    FROM picked p
    WHERE t.tenant_id = p.tenant_id AND t.service_call_id = p.service_call_id
    RETURNING ${returning}
  )`;
}

/** `earliest_due_at` of a tenant without Scheduled timers (bigint's largest value). */
const NO_DUE = "9223372036854775807";

/**
 * The candidates of a fair claim (fair-due-selection.ts): up to $2 tenants whose earliest due time
 * is at or before $1, earliest first.
 */
export const SELECT_DUE_TENANTS = `
  SELECT tenant_id AS "tenantId" FROM timer_due_tenants WHERE earliest_due_at <= $1
  ORDER BY earliest_due_at, tenant_id LIMIT $2`;

/**
 * The advisory lock of a tenant's row in timer_due_tenants: command batches hold it shared while
 * they check and lower the row, a poll raising the row takes it exclusively and skips the tenant when
 * it cannot (a batch may be about to schedule a timer the poll cannot see yet).
 */
const DUE_TENANT_LOCK = (tenant: string) => `hashtext('timer-service:due-tenant'), hashtext(${tenant})`;

/** Takes the shared due-tenant locks of the tenants $1 (sorted) for the rest of the transaction. */
export const LOCK_DUE_TENANTS_SHARED = `
  SELECT pg_advisory_xact_lock_shared(${DUE_TENANT_LOCK("t")}) FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n`;

/**
 * Lowers the earliest due time of the tenants $1 (sorted) to $2 where that is earlier. Run after
 * LOCK_DUE_TENANTS_SHARED, in a statement of its own so that it sees every raise committed before.
 * A tenant whose row is already as early writes (and locks) nothing: the common case.
 */
export const LOWER_DUE_TENANTS = `
  INSERT INTO timer_due_tenants (tenant_id, earliest_due_at)
  SELECT i.tenant_id, i.due_at FROM unnest($1::text[], $2::bigint[]) AS i(tenant_id, due_at)
  WHERE NOT EXISTS (SELECT 1 FROM timer_due_tenants d WHERE d.tenant_id = i.tenant_id AND d.earliest_due_at <= i.due_at)
  ON CONFLICT (tenant_id) DO UPDATE SET earliest_due_at = LEAST(timer_due_tenants.earliest_due_at, excluded.earliest_due_at)`;

/** Of the tenants $1, those whose due-tenant lock this transaction could take exclusively (no batch holds it). */
export const TRY_LOCK_DUE_TENANTS = `
  SELECT t AS "tenantId" FROM unnest($1::text[]) AS t WHERE pg_try_advisory_xact_lock(${DUE_TENANT_LOCK("t")})`;

/**
 * Raises the earliest due time of the tenants $1 (locked by TRY_LOCK_DUE_TENANTS in this
 * transaction, so no batch that could schedule for them is running) to the earliest due time of
 * their Scheduled timers. The state comes from `c`, as in CLAIM_DUE_FAIR, so that the tenant index
 * finds the minimum.
 */
export const RAISE_DUE_TENANTS = `
  WITH c AS MATERIALIZED (
    SELECT tenant_id, 'Scheduled'::text AS state FROM timer_due_tenants WHERE tenant_id = ANY($1::text[])
  ), s AS MATERIALIZED (
    SELECT c.tenant_id, coalesce(
      (SELECT min(t.due_at) FROM timer_schedules t WHERE t.tenant_id = c.tenant_id AND t.state = c.state),
      ${NO_DUE}) AS earliest
    FROM c
  )
  UPDATE timer_due_tenants d SET earliest_due_at = s.earliest
  FROM s
  WHERE d.tenant_id = s.tenant_id AND d.earliest_due_at < s.earliest`;

/**
 * Claims due timers fairly (fair-due-selection.ts): $1 owner, $2 lease until, $3 now, $4 limit,
 * $5 the candidate tenants in order, $6–$8 the chain's cursor (tenants, due times, serviceCallIds),
 * $9 how many timers to read per candidate. Each candidate's due timers oldest first, after its
 * cursor, locked as they are read — rows another transaction holds locked (another instance's claim
 * in progress) are skipped, not waited for, and a row changed meanwhile is checked again on its
 * newest version — then dealt round-robin (rank, then candidate position). Every CTE is evaluated
 * once (MATERIALIZED), so no rescan can lock more rows.
 * The state comes from `cand`, not as a literal: the partial due index (ordered by due time across
 * tenants) then cannot serve a tenant's range, which it would do by walking every other tenant's
 * earlier due timers; the tenant index finds it directly.
 */
export const CLAIM_DUE_FAIR = `
  WITH cand AS MATERIALIZED (
    SELECT c.tenant_id, c.pos, k.due_at AS after_due_at, k.service_call_id AS after_call_id, 'Scheduled'::text AS state
    FROM unnest($5::text[]) WITH ORDINALITY AS c(tenant_id, pos)
    LEFT JOIN unnest($6::text[], $7::bigint[], $8::text[]) AS k(tenant_id, due_at, service_call_id) ON k.tenant_id = c.tenant_id
  ), ranked AS MATERIALIZED (
    SELECT p.tenant_id, p.service_call_id, cand.pos, cand.state,
      row_number() OVER (PARTITION BY cand.pos ORDER BY p.due_at, p.service_call_id) AS rn
    FROM cand CROSS JOIN LATERAL (
      SELECT t.tenant_id, t.service_call_id, t.due_at FROM timer_schedules t
      WHERE t.tenant_id = cand.tenant_id AND t.state = cand.state AND t.due_at <= $3 AND ${UNCLAIMED}
        AND (cand.after_due_at IS NULL OR (t.due_at, t.service_call_id) > (cand.after_due_at, cand.after_call_id))
      ORDER BY t.due_at, t.service_call_id
      LIMIT $9
      FOR UPDATE OF t SKIP LOCKED
    ) p
  ), picked AS MATERIALIZED (
    SELECT * FROM ranked ORDER BY rn, pos LIMIT $4
  ), claimed AS (
    UPDATE timer_schedules t SET claimed_by = $1, claimed_until = $2
    FROM picked p
    WHERE t.tenant_id = p.tenant_id AND t.service_call_id = p.service_call_id
    RETURNING t.tenant_id, t.service_call_id, t.due_at, t.generation, t.data, t.correlation_id, t.occurrence,
      t.repeat, t.max_lateness_ms, t.command_ts, t.reached_at, t.delivery, t.trace_id, t.trace_flags, t.trace_state,
      t.trace_span_id, p.pos, p.rn
  )
  SELECT tenant_id AS "tenantId", service_call_id AS "serviceCallId", due_at AS "dueAtMs", generation, data,
    correlation_id AS "correlationId", occurrence, repeat, max_lateness_ms AS "maxLatenessMs",
    command_ts AS "commandTs", reached_at AS "reachedAtMs", delivery, ${PREFIX_CANCEL_TS} AS "prefixCancelTs",
    ${TRACE_SELECT}
  FROM claimed c
  ORDER BY rn, pos`;

/**
 * The state a batch update expects its rows in, as a value the planner cannot see through. Written
 * as a literal, the partial index of that state (due or deadline) matches the query, and when the
 * statistics predate a burst (analyzed while few rows were in that state) the planner takes that
 * index for nearly empty and reads it whole once per batch row; so the rows are found by key.
 */
function expectingState(state: "Scheduled" | "Fired"): string {
  return `WITH expected AS MATERIALIZED (SELECT '${state}'::text AS state)`;
}

/**
 * Records a batch of firings for owner $1: each firing ($2 tenants, $3 serviceCallIds, $4 dueAts and
 * $5 generations that were read) only while the timer is that version and no other owner holds a
 * live claim at the firing's update time ($11), and — unless the firing cancels it — no prefix cancel
 * recorded meanwhile covers it; it then becomes $6 state, $7 dueAt, $8 occurrence, $9 reachedAt,
 * $10 commandTs (never lower than the stored one: a command may have moved it), and loses its claim.
 */
export const RECORD_FIRINGS = `
  ${expectingState("Scheduled")}
  UPDATE timer_schedules t
  SET state = i.state, due_at = i.next_due_at, occurrence = i.occurrence,
    reached_at = i.reached_at, command_ts = GREATEST(t.command_ts, i.command_ts), updated_at = i.updated_at,
    attempt = COALESCE(i.attempt, t.attempt), fired_at = COALESCE(i.fired_at, t.fired_at), deadline_at = i.deadline_at,
    claimed_by = NULL, claimed_until = NULL
  FROM unnest($2::text[], $3::text[], $4::bigint[], $5::integer[], $6::text[], $7::bigint[], $8::bigint[],
      $9::bigint[], $10::bigint[], $11::bigint[], $12::integer[], $13::bigint[], $14::bigint[])
    AS i(tenant_id, service_call_id, due_at, generation, state, next_due_at, occurrence, reached_at, command_ts, updated_at,
      attempt, fired_at, deadline_at), expected
  WHERE t.tenant_id = i.tenant_id AND t.service_call_id = i.service_call_id
    AND t.state = expected.state AND t.due_at = i.due_at AND t.generation = i.generation
    AND (t.claimed_by IS NULL OR t.claimed_by = $1 OR t.claimed_until <= i.updated_at)
    AND (i.state = 'Cancelled' OR NOT EXISTS (
      SELECT 1 FROM timer_prefix_cancels p
      WHERE p.tenant_id = t.tenant_id AND p.service_call_id_prefix <= t.service_call_id
        AND starts_with(t.service_call_id, p.service_call_id_prefix) AND p.command_ts >= i.command_ts))
  RETURNING t.tenant_id AS "tenantId", t.service_call_id AS "serviceCallId"`;

/**
 * Drops owner $1's claims on Scheduled timers due at or before $2. Claims exist only on such rows
 * (a mark or a change of due time clears them), whose tenants have a due bound at or before $2:
 * only their due ranges are read, one tenant at a time (a subquery per tenant: the planner cannot
 * turn it into one scan of the table, however few Scheduled rows stale statistics promise there).
 */
export const RELEASE_ALL_CLAIMS = `
  WITH claimed AS MATERIALIZED (
    SELECT d.tenant_id, unnest(ARRAY(
      SELECT t.service_call_id FROM timer_schedules t
      WHERE t.tenant_id = d.tenant_id AND t.state = 'Scheduled' AND t.due_at <= $2 AND t.claimed_by = $1)) AS service_call_id
    FROM timer_due_tenants d WHERE d.earliest_due_at <= $2
  )
  UPDATE timer_schedules t SET claimed_by = NULL, claimed_until = NULL
  FROM claimed c WHERE t.tenant_id = c.tenant_id AND t.service_call_id = c.service_call_id`;

/**
 * Drops owner $1's claims on the keys $2 tenants, $3 serviceCallIds, found by primary key. The owner
 * test is wrapped in coalesce on purpose: `claimed_by` is NULL in nearly every row that statistics
 * sample (claims live for a publish), so a plain `claimed_by = $1` looks as if it matched almost
 * nothing, and the planner chose a sequential scan of the table filtered by it (the plan test).
 */
export const RELEASE_CLAIMS = `
  UPDATE timer_schedules t SET claimed_by = NULL, claimed_until = NULL
  FROM unnest($2::text[], $3::text[]) AS k(tenant_id, service_call_id)
  WHERE t.tenant_id = k.tenant_id AND t.service_call_id = k.service_call_id
    AND coalesce(t.claimed_by = $1, false)`;

/**
 * The earliest due time of a Scheduled timer: `earliest_due_at` is only a lower bound of a tenant's
 * (a cancel leaves it low until a poll raises it), so the real earliest of the NEXT_DUE_WALK tenants
 * with the lowest bounds is read from their due ranges, and the next tenant's bound caps the answer:
 * never later than the real one, exact unless more than NEXT_DUE_WALK tenants hold stale bounds
 * below it (the poll it wakes then raises them).
 */
const NEXT_DUE_WALK = 16;
export const NEXT_DUE_AT = `
  WITH lowest AS (
    SELECT tenant_id, earliest_due_at, row_number() OVER (ORDER BY earliest_due_at, tenant_id) AS n
    FROM (SELECT tenant_id, earliest_due_at FROM timer_due_tenants WHERE earliest_due_at < ${NO_DUE}
          ORDER BY earliest_due_at, tenant_id LIMIT ${NEXT_DUE_WALK + 1}) AS bounds)
  SELECT least(
    (SELECT min(e.due_at) FROM lowest l CROSS JOIN LATERAL (
       SELECT min(due_at) AS due_at FROM timer_schedules s WHERE s.tenant_id = l.tenant_id AND s.state = 'Scheduled') AS e
     WHERE l.n <= ${NEXT_DUE_WALK}),
    (SELECT earliest_due_at FROM lowest WHERE n = ${NEXT_DUE_WALK + 1})) AS "dueAtMs"`;

/** Summed over the counter rows of every backend (0002_state_counts.sql). */
export const COUNT_SCHEDULED = `SELECT coalesce(sum(count), 0)::bigint AS count FROM timer_state_counts WHERE state = 'Scheduled'`;

/** Scheduled timers of the tenants $1, summed over the counter rows of every backend (0002_state_counts.sql). */
export const COUNT_SCHEDULED_OF = `
  SELECT tenant_id AS "tenantId", sum(count)::bigint AS count FROM timer_state_counts
  WHERE tenant_id = ANY($1::text[]) AND state = 'Scheduled' GROUP BY tenant_id`;

/** The recorded prefix cancels of the tenants $1: what the batch's decisions consult. */
export const SELECT_PREFIX_CANCELS = `
  SELECT tenant_id AS "tenantId", service_call_id_prefix AS "serviceCallIdPrefix", command_ts AS "commandTs"
  FROM timer_prefix_cancels WHERE tenant_id = ANY($1::text[])`;

/**
 * Records accepted prefix cancels ($1 tenants, $2 prefixes, $3 timestamps, $4 now), restarting their
 * sweep; a newer one recorded meanwhile by another instance is kept, so the outcome does not depend
 * on which instance commits first.
 */
export const UPSERT_PREFIX_CANCELS = `
  INSERT INTO timer_prefix_cancels (tenant_id, service_call_id_prefix, command_ts, updated_at, progress_key)
  SELECT tenant_id, prefix, command_ts, $4::bigint, ''
  FROM unnest($1::text[], $2::text[], $3::bigint[]) AS i(tenant_id, prefix, command_ts)
  ON CONFLICT (tenant_id, service_call_id_prefix) DO UPDATE
  SET command_ts = excluded.command_ts, updated_at = excluded.updated_at, progress_key = ''
  WHERE excluded.command_ts > timer_prefix_cancels.command_ts`;

export const SELECT_UNFINISHED_PREFIX_CANCELS = `
  SELECT tenant_id AS "tenantId", service_call_id_prefix AS "serviceCallIdPrefix", command_ts AS "commandTs",
    progress_key AS "progressKey"
  FROM timer_prefix_cancels WHERE progress_key IS NOT NULL
  ORDER BY tenant_id, service_call_id_prefix`;

/** One prefix cancel ($1 tenant, $2 prefix), locked: one sweep step at a time, whichever instance runs it. */
export const LOCK_PREFIX_CANCEL = `
  SELECT command_ts AS "commandTs", progress_key AS "progressKey" FROM timer_prefix_cancels
  WHERE tenant_id = $1 AND service_call_id_prefix = $2
  FOR UPDATE`;

/**
 * The next $5 timers of tenant $1 with a serviceCallId in [$2 prefix, $3 bound) after $4 progress,
 * in key order, locked ($3 null: no upper bound). The primary key serves the range.
 */
export const SELECT_PREFIX_SWEEP_BATCH = `
  SELECT ${TIMER_SELECT} FROM timer_schedules
  WHERE tenant_id = $1 AND service_call_id >= $2::text AND ($3::text IS NULL OR service_call_id < $3::text)
    AND service_call_id > $4::text
  ORDER BY service_call_id
  LIMIT $5
  FOR UPDATE`;

export const UPDATE_PREFIX_PROGRESS = `
  UPDATE timer_prefix_cancels SET progress_key = $3 WHERE tenant_id = $1 AND service_call_id_prefix = $2`;

/**
 * Claims Fired timers whose deadline passed (CONTRACT §11): $1 owner, $2 lease until, $3 now,
 * $4 limit; through the partial index timer_schedules_fired_deadline_idx, skipping locked rows.
 */
export const CLAIM_DEADLINES = `${claimRows("state = 'Fired' AND deadline_at <= $3", "deadline_at, tenant_id, service_call_id", "t.*")}
  SELECT tenant_id AS "tenantId", service_call_id AS "serviceCallId", due_at AS "dueAtMs", generation, data,
    correlation_id AS "correlationId", reached_at AS "reachedAtMs", updated_at AS "updatedAtMs",
    last_reason AS "lastReason", delivery, attempt, deadline_at AS "deadlineAtMs", ${TRACE_SELECT}
  FROM claimed
  ORDER BY deadline_at, tenant_id, service_call_id`;

/**
 * Records passed deadlines for owner $1 ($2 tenants, $3 serviceCallIds, $4 attempts and $5 deadlines
 * that were read): only while the timer is still Fired at that attempt and deadline and no other
 * owner holds a live claim; the claim is given up.
 */
export const RECORD_DEADLINES = `
  ${expectingState("Fired")}
  UPDATE timer_schedules t
  SET state = i.state, attempt = i.next_attempt, reached_at = i.reached_at, deadline_at = i.next_deadline_at,
    last_reason = i.last_reason, updated_at = i.updated_at, claimed_by = NULL, claimed_until = NULL
  FROM unnest($2::text[], $3::text[], $4::integer[], $5::bigint[], $6::text[], $7::integer[], $8::bigint[],
      $9::bigint[], $10::text[], $11::bigint[])
    AS i(tenant_id, service_call_id, attempt, deadline_at, state, next_attempt, reached_at, next_deadline_at, last_reason, updated_at),
    expected
  WHERE t.tenant_id = i.tenant_id AND t.service_call_id = i.service_call_id
    AND t.state = expected.state AND t.attempt = i.attempt AND t.deadline_at = i.deadline_at
    AND (t.claimed_by IS NULL OR t.claimed_by = $1 OR t.claimed_until <= i.updated_at)
  RETURNING t.tenant_id AS "tenantId", t.service_call_id AS "serviceCallId"`;

export const NEXT_DEADLINE_AT = `SELECT min(deadline_at) AS "deadlineAtMs" FROM timer_schedules WHERE state = 'Fired'`;
