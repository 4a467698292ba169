import type Database from "better-sqlite3";

/** What the tallies read of a row of timer_schedules, before or after a write. */
export interface TalliedRow {
  readonly tenantId: string;
  readonly state: string;
  readonly dueAtMs?: number | null;
  readonly firedAtMs?: number | null;
  readonly completedAtMs?: number | null;
}

/** One (tenant, state) line of timer_state_counts, as a change to add. */
interface CountDelta {
  count: number;
  durationSumMs: number;
  durationCount: number;
}

/**
 * The statements that apply a batch's tallies: one per table, whatever the number of tenants (the
 * deltas travel as one JSON array). `WHERE true`: SQLite needs it to read the ON CONFLICT of an
 * INSERT … SELECT as an upsert.
 */
const ADD_COUNTS_SQL = `
  INSERT INTO timer_state_counts (tenant_id, state, count, duration_sum_ms, duration_count)
  SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4 FROM json_each(?) WHERE true
  ON CONFLICT (tenant_id, state) DO UPDATE SET count = count + excluded.count,
    duration_sum_ms = duration_sum_ms + excluded.duration_sum_ms, duration_count = duration_count + excluded.duration_count`;

const LOWER_DUE_TENANTS_SQL = `
  INSERT INTO timer_due_tenants (tenant_id, earliest_due_at)
  SELECT value ->> 0, value ->> 1 FROM json_each(?) WHERE true
  ON CONFLICT (tenant_id) DO UPDATE SET earliest_due_at = excluded.earliest_due_at
  WHERE excluded.earliest_due_at < earliest_due_at`;

/**
 * Recounts both tables from timer_schedules, as the migration that introduced these tallies does:
 * for rows written around the store (test seeds, bench fills), inside a transaction of the caller's.
 */
export function recountTallies(db: Database.Database): void {
  db.exec(`
    DELETE FROM timer_state_counts;
    INSERT INTO timer_state_counts (tenant_id, state, count, duration_sum_ms, duration_count)
    SELECT tenant_id, state, count(*),
      coalesce(sum(CASE WHEN state = 'Completed' AND completed_at IS NOT NULL AND fired_at IS NOT NULL THEN completed_at - fired_at END), 0),
      count(CASE WHEN state = 'Completed' AND completed_at IS NOT NULL AND fired_at IS NOT NULL THEN 1 END)
    FROM timer_schedules GROUP BY tenant_id, state;
    DELETE FROM timer_due_tenants;
    INSERT INTO timer_due_tenants (tenant_id, earliest_due_at)
    SELECT tenant_id, min(due_at) FROM timer_schedules WHERE state = 'Scheduled' GROUP BY tenant_id;`);
}

/** A Completed timer with both instants counts toward its tenant's average duration (CONTRACT §9). */
function durationOf(row: TalliedRow): number | undefined {
  if (row.state !== "Completed" || row.completedAtMs == null || row.firedAtMs == null) return undefined;
  return row.completedAtMs - row.firedAtMs;
}

/**
 * What one write transaction did to `timer_state_counts` and `timer_due_tenants`, gathered in memory
 * as its rows change and written once, at the end of the transaction (`flush`): the per-tenant
 * counts of each state (with the Completed durations) and, per tenant that has a timer Scheduled
 * by the transaction, the earliest such due time (an entry is only lowered here; the writer raises
 * entries itself). Every write to timer_schedules in the store goes through one of these, so the
 * two tables stay a recount of timer_schedules.
 */
export class BatchTallies {
  readonly #addCounts: Database.Statement<[string]>;
  readonly #lowerDueTenants: Database.Statement<[string]>;
  /** Per tenant, per state. */
  readonly #counts = new Map<string, Map<string, CountDelta>>();
  /** Per tenant, its earliest due time made Scheduled by the transaction. */
  readonly #scheduled = new Map<string, number>();

  constructor(db: Database.Database) {
    this.#addCounts = db.prepare(ADD_COUNTS_SQL);
    this.#lowerDueTenants = db.prepare(LOWER_DUE_TENANTS_SQL);
  }

  /**
   * A row went from `previous` (undefined: it was inserted) to `next` (undefined: it was deleted).
   * A row written again in the same state, with the same instants, changes no count.
   */
  changed(previous: TalliedRow | undefined, next: TalliedRow | undefined): void {
    if (previous !== undefined) this.#add(previous, -1);
    if (next === undefined) return;
    this.#add(next, 1);
    if (next.state === "Scheduled" && next.dueAtMs != null) {
      const earliest = this.#scheduled.get(next.tenantId);
      if (earliest === undefined || next.dueAtMs < earliest) this.#scheduled.set(next.tenantId, next.dueAtMs);
    }
  }

  #add(row: TalliedRow, sign: 1 | -1): void {
    let states = this.#counts.get(row.tenantId);
    if (states === undefined) this.#counts.set(row.tenantId, (states = new Map()));
    let delta = states.get(row.state);
    if (delta === undefined) states.set(row.state, (delta = { count: 0, durationSumMs: 0, durationCount: 0 }));
    delta.count += sign;
    const duration = durationOf(row);
    if (duration !== undefined) {
      delta.durationSumMs += sign * duration;
      delta.durationCount += sign;
    }
  }

  /** `db.transaction(write)` with the tallies around `write` (see `around`). */
  transaction<A extends unknown[], R>(db: Database.Database, write: (...args: A) => R): Database.Transaction<(...args: A) => R> {
    return db.transaction(this.around(write));
  }

  /**
   * `write` with the tallies around it: they start empty, and what it changed is written at its
   * end, inside the same transaction (wrap the body of a `db.transaction`).
   */
  around<A extends unknown[], R>(write: (...args: A) => R): (...args: A) => R {
    return (...args) => {
      this.discard();
      const result = write(...args);
      this.flush();
      return result;
    };
  }

  /** Writes what was gathered (inside the transaction that made the changes) and starts over. */
  flush(): void {
    const counts: [string, string, number, number, number][] = [];
    for (const [tenantId, states] of this.#counts) {
      for (const [state, { count, durationSumMs, durationCount }] of states) {
        if (count !== 0 || durationSumMs !== 0 || durationCount !== 0) counts.push([tenantId, state, count, durationSumMs, durationCount]);
      }
    }
    if (counts.length > 0) this.#addCounts.run(JSON.stringify(counts));
    if (this.#scheduled.size > 0) this.#lowerDueTenants.run(JSON.stringify([...this.#scheduled]));
    this.discard();
  }

  /** Forgets what was gathered: the transaction rolled back. */
  discard(): void {
    this.#counts.clear();
    this.#scheduled.clear();
  }
}
