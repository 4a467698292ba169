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
 * One row per timer key, as in SQLite (src/adapters/sqlite/timer-schedules.schema.ts), plus the
 * claim an instance holds while it publishes the timer. Instants are bigint milliseconds since the
 * epoch, UTC. The table carries no schema: it lives in `TIMER_DATABASE_SCHEMA`, which each
 * connection puts first on its `search_path`. Source of the migrations in drizzle/postgres
 * (`npm run db:generate`).
 */
export const timerSchedules = pgTable(
  "timer_schedules",
  {
    tenantId: codePointText("tenant_id").notNull(),
    serviceCallId: codePointText("service_call_id").notNull(),
    state: text("state", { enum: ["Scheduled", "Reached", "Cancelled"] }).notNull(),
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
    /** The instance publishing the timer; its claim holds until `claimed_until`. */
    claimedBy: text("claimed_by"),
    claimedUntil: bigint("claimed_until", { mode: "number" }),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.serviceCallId] }),
    check("timer_schedules_state_check", sql`${t.state} IN ('Scheduled', 'Reached', 'Cancelled')`),
    check("timer_schedules_due_at_check", sql`${t.dueAt} IS NOT NULL OR ${t.state} = 'Cancelled'`),
    // Partial: final rows accumulate, claims must not pay for them. Serves claimDue's ORDER BY,
    // nextDueAt's min(due_at) and countScheduled. The claim columns stay unindexed, so taking a
    // claim can be a HOT update.
    index("timer_schedules_due_idx")
      .on(t.dueAt, t.tenantId, t.serviceCallId)
      .where(sql`${t.state} = 'Scheduled'`),
  ],
);
