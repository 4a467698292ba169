import { sql } from "drizzle-orm";
import { check, index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * One row per timer key. Instants are integer milliseconds since the epoch, UTC. This schema is the
 * source of the migrations in drizzle/sqlite (`npm run db:generate`; CI checks that it makes no
 * diff). The custom migration 0001_without_rowid rebuilds the table WITHOUT ROWID, which drizzle-kit
 * cannot express: rows live in the primary-key b-tree, saving a second b-tree write per command
 * (docs/benchmarks.md). A future change that makes
 * drizzle-kit recreate the table must repeat that in a custom migration. `timer_state_counts` (counts
 * per tenant and state that `stats` reads instead of counting the tenant's rows, CONTRACT §9) and
 * `timer_due_tenants` are kept by the store's writes themselves (batch-tallies.ts), not by triggers.
 */
/** Every state of CONTRACT §3: Reached, Missed, Cancelled, Completed, Failed, TimedOut are final. */
export const TIMER_STATES = ["Scheduled", "Reached", "Cancelled", "Missed", "Fired", "Completed", "Failed", "TimedOut"] as const;

export const timerSchedules = sqliteTable(
  "timer_schedules",
  {
    tenantId: text("tenant_id").notNull(),
    serviceCallId: text("service_call_id").notNull(),
    state: text("state", { enum: TIMER_STATES }).notNull(),
    /** Null only for a tombstone: the cancel of a key that was never scheduled. */
    dueAt: integer("due_at"),
    /** JSON text of the command's `data` (re-serialized once on ingest), echoed as is in events. */
    data: text("data"),
    correlationId: text("correlation_id"),
    /** The largest timestampMs of the commands applied to this timer. */
    commandTs: integer("command_ts").notNull(),
    /** 1 at creation, +1 whenever a command changes what fires or re-arms the timer (CONTRACT §10). */
    generation: integer("generation").notNull().default(1),
    registeredAt: integer("registered_at").notNull(),
    reachedAt: integer("reached_at"),
    updatedAt: integer("updated_at").notNull(),
    /** JSON text of the `repeat` rule of a recurring timer (CONTRACT §10); null for a one-shot. */
    repeat: text("repeat"),
    /** Which occurrence `due_at` is (1, 2, …); 1 for a one-shot. */
    occurrence: integer("occurrence").notNull().default(1),
    /** `maxLatenessMs` (CONTRACT §10); null: any lateness is fine. */
    maxLatenessMs: integer("max_lateness_ms"),
    /** JSON text of `delivery` (CONTRACT §11); null: the timer is not tracked after firing. */
    delivery: text("delivery"),
    createdBy: text("created_by"),
    createdVia: text("created_via"),
    /** Publishes of the event so far (CONTRACT §11 `attempt`); 0 before the first. */
    attempt: integer("attempt").notNull().default(0),
    /** First publish of a tracked timer. */
    firedAt: integer("fired_at"),
    completedAt: integer("completed_at"),
    /** TimerCompleted `result`, or the last TimerFailed `reason`. */
    result: text("result"),
    lastReason: text("last_reason"),
    /** For a `Fired` timer: when it must be looked at again (completion time-out or retry). */
    deadlineAt: integer("deadline_at"),
    /** W3C trace context of the command that set what fires (CONTRACT §13); null before tracing. */
    traceId: text("trace_id"),
    traceFlags: integer("trace_flags"),
    traceState: text("trace_state"),
    /** The span the timer's spans and events hang under. */
    traceSpanId: text("trace_span_id"),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.serviceCallId] }),
    check(
      "timer_schedules_state_check",
      sql`${t.state} IN ('Scheduled', 'Reached', 'Cancelled', 'Missed', 'Fired', 'Completed', 'Failed', 'TimedOut')`,
    ),
    check("timer_schedules_due_at_check", sql`${t.dueAt} IS NOT NULL OR ${t.state} = 'Cancelled'`),
    // No index by due time across tenants: each one costs a random b-tree write per scheduled timer,
    // and the firing path reads due tenants from timer_due_tenants, counts from timer_state_counts.
    // The fair claim and queries (CONTRACT §9, §12): a tenant's timers by state, in (dueAt, serviceCallId) order.
    index("timer_schedules_tenant_state_due_idx").on(t.tenantId, t.state, t.dueAt, t.serviceCallId),
    // Queries (CONTRACT §14, order changedDesc): a tenant's timers newest change first, by state,
    // by createdBy, or all of them; walked backwards from the cursor, index only.
    // By state only for the states operators look for: the hot paths (scheduling, firing into
    // Reached) then write no entry of it. Scheduled and Reached walk the tenant index below.
    index("timer_schedules_tenant_state_updated_idx")
      .on(t.tenantId, t.state, t.updatedAt, t.serviceCallId)
      .where(sql`${t.state} IN ('Cancelled', 'Missed', 'Fired', 'Completed', 'Failed', 'TimedOut')`),
    index("timer_schedules_tenant_updated_idx").on(t.tenantId, t.updatedAt, t.serviceCallId),
    index("timer_schedules_tenant_created_by_idx")
      .on(t.tenantId, t.createdBy, t.updatedAt, t.serviceCallId)
      .where(sql`${t.createdBy} IS NOT NULL`),
    // Retention (CONTRACT §7): final timers by their last change.
    index("timer_schedules_final_updated_idx")
      .on(t.updatedAt)
      .where(sql`${t.state} IN ('Reached', 'Cancelled', 'Missed', 'Completed', 'Failed', 'TimedOut')`),
    // Completion tracking (CONTRACT §11): Fired timers by their next deadline.
    index("timer_schedules_fired_deadline_idx")
      .on(t.deadlineAt, t.tenantId, t.serviceCallId)
      .where(sql`${t.state} = 'Fired'`),
  ],
);

/**
 * Timers' histories (CONTRACT §19): a log, one row per entry (sqlite-timer-history.ts). The rowid
 * grows with each entry, so every entry is written at the table's end; only the index by key is
 * written among the timer's other entries, and it finds them in rowid order. The oldest beyond
 * TIMER_HISTORY_ENTRIES goes in the same transaction; retention deletes them with the timer.
 */
export const timerHistory = sqliteTable(
  "timer_history",
  {
    id: integer("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    serviceCallId: text("service_call_id").notNull(),
    /** One entry's JSON text (timer-history.ts). */
    entry: text("entry").notNull(),
  },
  (t) => [index("timer_history_key_idx").on(t.tenantId, t.serviceCallId)],
);

/**
 * `CancelTimersByPrefix` commands (CONTRACT §10): kept so that a later-arriving ScheduleTimer for a
 * matching key with an older timestamp stays cancelled, for as long as retention keeps them.
 */
export const timerPrefixCancels = sqliteTable(
  "timer_prefix_cancels",
  {
    tenantId: text("tenant_id").notNull(),
    serviceCallIdPrefix: text("service_call_id_prefix").notNull(),
    /** The largest timestampMs of the prefix cancels for this prefix. */
    commandTs: integer("command_ts").notNull(),
    updatedAt: integer("updated_at").notNull(),
    /** Where the batched cancelling of matching timers has got to; null once it is done. */
    progressKey: text("progress_key"),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.serviceCallIdPrefix] })],
);

/**
 * Facts about the database itself. `store_id` is a random id made when the database is created
 * (custom migration 0007): the broker lease of a SQLite instance names it (CONTRACT §6), so a second
 * instance with another database is told apart from a restart on the same one.
 */
export const timerStoreMeta = sqliteTable("timer_store_meta", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});
