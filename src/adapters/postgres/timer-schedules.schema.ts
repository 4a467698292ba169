import { sql } from "drizzle-orm";
import { bigint, check, customType, index, integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";

/**
 * Text compared byte by byte (`COLLATE "C"`): UTF-8 bytes order as code points, so keys sort as
 * in SQLite and the memory store whatever the database's default collation is, and the due index
 * serves the `ORDER BY due_at, tenant_id, service_call_id` of claims without a sort.
 */
const codePointText = customType<{ data: string; driverData: string }>({
  dataType: () => 'text COLLATE "C"',
});

/**
 * One row per timer key, with the columns of SQLite (src/adapters/sqlite/timer-schedules.schema.ts) plus the
 * claim an instance holds while it publishes the timer. Instants are bigint milliseconds since the
 * epoch, UTC. The table carries no schema: it lives in `TIMER_DATABASE_SCHEMA`, which each
 * connection puts first on its `search_path`. Source of the migrations in drizzle/postgres
 * (`npm run db:generate`).
 */
/** Every state of CONTRACT §3: Reached, Missed, Cancelled, Completed, Failed, TimedOut are final. */
export const TIMER_STATES = ["Scheduled", "Reached", "Cancelled", "Missed", "Fired", "Completed", "Failed", "TimedOut"] as const;

export const timerSchedules = pgTable(
  "timer_schedules",
  {
    tenantId: codePointText("tenant_id").notNull(),
    serviceCallId: codePointText("service_call_id").notNull(),
    state: text("state", { enum: TIMER_STATES }).notNull(),
    /** Null only for a tombstone: the cancel of a key that was never scheduled. */
    dueAt: bigint("due_at", { mode: "number" }),
    /** JSON text of the command's `data`, echoed as is in events. */
    data: text("data"),
    correlationId: text("correlation_id"),
    /** The largest timestampMs of the commands applied to this timer. */
    commandTs: bigint("command_ts", { mode: "number" }).notNull(),
    /** 1 at creation, +1 whenever a command changes what fires or re-arms the timer (CONTRACT §10). */
    generation: integer("generation").notNull().default(1),
    registeredAt: bigint("registered_at", { mode: "number" }).notNull(),
    reachedAt: bigint("reached_at", { mode: "number" }),
    updatedAt: bigint("updated_at", { mode: "number" }).notNull(),
    /** JSON text of the `repeat` rule of a recurring timer (CONTRACT §10); null for a one-shot. */
    repeat: text("repeat"),
    /** Which occurrence `due_at` is (1, 2, …); 1 for a one-shot. */
    occurrence: bigint("occurrence", { mode: "number" }).notNull().default(1),
    /** `maxLatenessMs` (CONTRACT §10); null: any lateness is fine. */
    maxLatenessMs: bigint("max_lateness_ms", { mode: "number" }),
    /** JSON text of `delivery` (CONTRACT §11); null: the timer is not tracked after firing. */
    delivery: text("delivery"),
    createdBy: text("created_by"),
    createdVia: text("created_via"),
    /** Publishes of the event so far (CONTRACT §11 `attempt`); 0 before the first. */
    attempt: integer("attempt").notNull().default(0),
    /** First publish of a tracked timer. */
    firedAt: bigint("fired_at", { mode: "number" }),
    completedAt: bigint("completed_at", { mode: "number" }),
    /** TimerCompleted `result`, or the last TimerFailed `reason`. */
    result: text("result"),
    lastReason: text("last_reason"),
    /** For a `Fired` timer: when it must be looked at again (completion time-out or retry). */
    deadlineAt: bigint("deadline_at", { mode: "number" }),
    /** W3C trace context of the command that set what fires (CONTRACT §13); null before tracing. */
    traceId: text("trace_id"),
    traceFlags: integer("trace_flags"),
    traceState: text("trace_state"),
    /** The span the timer's spans and events hang under. */
    traceSpanId: text("trace_span_id"),
    /** The instance publishing the timer; its claim holds until `claimed_until`. */
    claimedBy: text("claimed_by"),
    claimedUntil: bigint("claimed_until", { mode: "number" }),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.serviceCallId] }),
    check(
      "timer_schedules_state_check",
      sql`${t.state} IN ('Scheduled', 'Reached', 'Cancelled', 'Missed', 'Fired', 'Completed', 'Failed', 'TimedOut')`,
    ),
    check("timer_schedules_due_at_check", sql`${t.dueAt} IS NOT NULL OR ${t.state} = 'Cancelled'`),
    // No index by due time across tenants: each one costs a b-tree write per scheduled timer, and
    // the firing path goes through timer_due_tenants (due tenants, next due time) and the kept
    // counts. The claim columns stay unindexed, so taking a claim can be a HOT update.
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
 * A timer's history (CONTRACT §19): one row per entry, `seq` counting the timer's entries from 1.
 * Appending inserts one short row and drops those fallen out of the last TIMER_HISTORY_ENTRIES, so a
 * command never rewrites the entries before it (nor the timer's row). Keys are `COLLATE "C"` like
 * the timer's, so a join of the two uses either primary key. Deleted with the timer by retention.
 */
export const timerHistory = pgTable(
  "timer_history",
  {
    tenantId: codePointText("tenant_id").notNull(),
    serviceCallId: codePointText("service_call_id").notNull(),
    seq: bigint("seq", { mode: "number" }).notNull(),
    /** One entry's JSON text (timer-history.ts). */
    entry: text("entry").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.serviceCallId, t.seq] })],
);

/**
 * `CancelTimersByPrefix` commands (CONTRACT §10): kept so that a later-arriving ScheduleTimer for a
 * matching key with an older timestamp stays cancelled, for as long as retention keeps them.
 */
export const timerPrefixCancels = pgTable(
  "timer_prefix_cancels",
  {
    tenantId: codePointText("tenant_id").notNull(),
    serviceCallIdPrefix: codePointText("service_call_id_prefix").notNull(),
    /** The largest timestampMs of the prefix cancels for this prefix. */
    commandTs: bigint("command_ts", { mode: "number" }).notNull(),
    updatedAt: bigint("updated_at", { mode: "number" }).notNull(),
    /** Where the batched cancelling of matching timers has got to ("" before the first batch); null once done. */
    progressKey: codePointText("progress_key"),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.serviceCallIdPrefix] })],
);
