-- Custom migration (drizzle-kit generate --custom): counts of timers per tenant and state, so that
-- `stats` (CONTRACT §9) sums a few rows instead of counting a tenant's rows (a parallel sequential
-- scan: ~150 ms at 1,000,000 timers). Kept by statement-level triggers with transition tables: one
-- aggregate per statement, not one counter update per row, so a batch upsert or a batch of firing
-- marks pays once. Each statement adds its net deltas into counter rows of its own backend (slot =
-- pg_backend_pid()): two transactions running at once never share a counter row, so they never wait
-- on one another's counters nor deadlock over them (one statement can fire two triggers, an INSERT …
-- ON CONFLICT DO UPDATE both its insert and its update trigger, so a shared row could be locked in
-- either order). `stats` sums the slots. Rows of backends that have ended are folded into slot 0 when
-- an instance starts (FOLD_ENDED_BACKEND_COUNTS in src/adapters/postgres/postgres-migrations.ts),
-- so their number stays about the number of live backends.
-- `duration_sum_ms` / `duration_count` cover Completed timers with both instants (average duration).
-- The table lock keeps writers of running instances out between the recount and the triggers
-- (drizzle runs all pending migrations in one transaction).
LOCK TABLE "timer_schedules" IN SHARE ROW EXCLUSIVE MODE;
--> statement-breakpoint
CREATE TABLE "timer_state_counts" (
	"tenant_id" text COLLATE "C" NOT NULL,
	"state" text NOT NULL,
	"slot" integer NOT NULL,
	"count" bigint NOT NULL,
	"duration_sum_ms" bigint NOT NULL,
	"duration_count" bigint NOT NULL,
	CONSTRAINT "timer_state_counts_pk" PRIMARY KEY ("tenant_id", "state", "slot")
) WITH (fillfactor = 50);
--> statement-breakpoint
INSERT INTO "timer_state_counts" ("tenant_id", "state", "slot", "count", "duration_sum_ms", "duration_count")
SELECT "tenant_id", "state", 0, count(*),
	coalesce(sum(CASE WHEN "state" = 'Completed' AND "completed_at" IS NOT NULL AND "fired_at" IS NOT NULL THEN "completed_at" - "fired_at" END), 0),
	count(CASE WHEN "state" = 'Completed' AND "completed_at" IS NOT NULL AND "fired_at" IS NOT NULL THEN 1 END)
FROM "timer_schedules" GROUP BY "tenant_id", "state";
--> statement-breakpoint
-- Rows leave their old (tenant, state) with sign -1 and enter their new one with +1; `duration` is
-- the completion duration of a Completed row with both instants (null otherwise), added with the sign.
-- Each trigger's statement names only its own transition tables, hence one branch per operation,
-- each with its own copy of the upsert: one shared SQL function taking the rows as arrays measured
-- +22 % Postgres CPU per fired timer (claims and marks fire the update trigger on every statement).
-- `SET search_path FROM CURRENT` pins the function to this schema whatever the writing session's path.
CREATE FUNCTION "timer_state_counts_apply"() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
	IF TG_OP = 'TRUNCATE' THEN
		DELETE FROM timer_state_counts;
	ELSIF TG_OP = 'INSERT' THEN
	INSERT INTO timer_state_counts AS c (tenant_id, state, slot, count, duration_sum_ms, duration_count)
	SELECT tenant_id, state, pg_backend_pid(), sum(sign), coalesce(sum(sign * duration), 0), sum(CASE WHEN duration IS NULL THEN 0 ELSE sign END)
	FROM (SELECT tenant_id, state, 1 AS sign, CASE WHEN state = 'Completed' AND completed_at IS NOT NULL AND fired_at IS NOT NULL THEN completed_at - fired_at END AS duration FROM new_rows) changed
	GROUP BY tenant_id, state
	HAVING sum(sign) <> 0 OR coalesce(sum(sign * duration), 0) <> 0 OR sum(CASE WHEN duration IS NULL THEN 0 ELSE sign END) <> 0
	ON CONFLICT (tenant_id, state, slot) DO UPDATE SET
		count = c.count + excluded.count,
		duration_sum_ms = c.duration_sum_ms + excluded.duration_sum_ms,
		duration_count = c.duration_count + excluded.duration_count;
	ELSIF TG_OP = 'DELETE' THEN
	INSERT INTO timer_state_counts AS c (tenant_id, state, slot, count, duration_sum_ms, duration_count)
	SELECT tenant_id, state, pg_backend_pid(), sum(sign), coalesce(sum(sign * duration), 0), sum(CASE WHEN duration IS NULL THEN 0 ELSE sign END)
	FROM (SELECT tenant_id, state, -1 AS sign, CASE WHEN state = 'Completed' AND completed_at IS NOT NULL AND fired_at IS NOT NULL THEN completed_at - fired_at END AS duration FROM old_rows) changed
	GROUP BY tenant_id, state
	HAVING sum(sign) <> 0 OR coalesce(sum(sign * duration), 0) <> 0 OR sum(CASE WHEN duration IS NULL THEN 0 ELSE sign END) <> 0
	ON CONFLICT (tenant_id, state, slot) DO UPDATE SET
		count = c.count + excluded.count,
		duration_sum_ms = c.duration_sum_ms + excluded.duration_sum_ms,
		duration_count = c.duration_count + excluded.duration_count;
	ELSE
	INSERT INTO timer_state_counts AS c (tenant_id, state, slot, count, duration_sum_ms, duration_count)
	SELECT tenant_id, state, pg_backend_pid(), sum(sign), coalesce(sum(sign * duration), 0), sum(CASE WHEN duration IS NULL THEN 0 ELSE sign END)
	FROM (SELECT tenant_id, state, 1 AS sign, CASE WHEN state = 'Completed' AND completed_at IS NOT NULL AND fired_at IS NOT NULL THEN completed_at - fired_at END AS duration FROM new_rows
		UNION ALL SELECT tenant_id, state, -1 AS sign, CASE WHEN state = 'Completed' AND completed_at IS NOT NULL AND fired_at IS NOT NULL THEN completed_at - fired_at END AS duration FROM old_rows) changed
	GROUP BY tenant_id, state
	HAVING sum(sign) <> 0 OR coalesce(sum(sign * duration), 0) <> 0 OR sum(CASE WHEN duration IS NULL THEN 0 ELSE sign END) <> 0
	ON CONFLICT (tenant_id, state, slot) DO UPDATE SET
		count = c.count + excluded.count,
		duration_sum_ms = c.duration_sum_ms + excluded.duration_sum_ms,
		duration_count = c.duration_count + excluded.duration_count;
	END IF;
	RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "timer_state_counts_insert" AFTER INSERT ON "timer_schedules"
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "timer_state_counts_apply"();
--> statement-breakpoint
CREATE TRIGGER "timer_state_counts_update" AFTER UPDATE ON "timer_schedules"
	REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "timer_state_counts_apply"();
--> statement-breakpoint
CREATE TRIGGER "timer_state_counts_delete" AFTER DELETE ON "timer_schedules"
	REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "timer_state_counts_apply"();
--> statement-breakpoint
CREATE TRIGGER "timer_state_counts_truncate" AFTER TRUNCATE ON "timer_schedules"
	FOR EACH STATEMENT EXECUTE FUNCTION "timer_state_counts_apply"();
