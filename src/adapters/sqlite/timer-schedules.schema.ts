import { sql } from "drizzle-orm";
import { check, index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * One row per timer key. Instants are integer milliseconds since the epoch, UTC. This schema is the
 * source of the migrations in drizzle/sqlite (`npm run db:generate`; CI checks that it makes no
 * diff). The custom migration 0001_without_rowid rebuilds the table WITHOUT ROWID, which drizzle-kit
 * cannot express: rows live in the primary-key b-tree, saving a second b-tree write per command
 * (measured ~52 → ~40 µs of CPU per command with 1M timers stored). A future change that makes
 * drizzle-kit recreate the table must repeat that in a custom migration.
 */
export const timerSchedules = sqliteTable(
  "timer_schedules",
  {
    tenantId: text("tenant_id").notNull(),
    serviceCallId: text("service_call_id").notNull(),
    state: text("state", { enum: ["Scheduled", "Reached", "Cancelled"] }).notNull(),
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
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.serviceCallId] }),
    check("timer_schedules_state_check", sql`${t.state} IN ('Scheduled', 'Reached', 'Cancelled')`),
    check("timer_schedules_due_at_check", sql`${t.dueAt} IS NOT NULL OR ${t.state} = 'Cancelled'`),
    // Partial: Reached and Cancelled rows accumulate forever, the poll must not pay for them.
    // Serves findDue's ORDER BY, nextDueAt's min(due_at) and countScheduled.
    index("timer_schedules_due_idx")
      .on(t.dueAt, t.tenantId, t.serviceCallId)
      .where(sql`${t.state} = 'Scheduled'`),
  ],
);

