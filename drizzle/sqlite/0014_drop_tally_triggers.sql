-- Custom migration (drizzle-kit generate --custom): `timer_state_counts` and `timer_due_tenants`
-- are kept by the store's writer, once per transaction, from what each write changed
-- (src/adapters/sqlite/batch-tallies.ts), instead of by a trigger per written row. A SQLite release
-- is stop-and-start (CONTRACT §18), so no older build writes this file after this migration.
-- Both tables are recounted once from `timer_schedules`, so they start exact whatever came before.
DROP TRIGGER IF EXISTS `timer_state_counts_insert`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `timer_state_counts_update`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `timer_state_counts_delete`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `timer_due_tenants_insert`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `timer_due_tenants_update`;
--> statement-breakpoint
DELETE FROM `timer_state_counts`;
--> statement-breakpoint
INSERT INTO `timer_state_counts` (`tenant_id`, `state`, `count`, `duration_sum_ms`, `duration_count`)
SELECT `tenant_id`, `state`, count(*),
	coalesce(sum(CASE WHEN `state` = 'Completed' AND `completed_at` IS NOT NULL AND `fired_at` IS NOT NULL THEN `completed_at` - `fired_at` END), 0),
	count(CASE WHEN `state` = 'Completed' AND `completed_at` IS NOT NULL AND `fired_at` IS NOT NULL THEN 1 END)
FROM `timer_schedules` GROUP BY `tenant_id`, `state`;
--> statement-breakpoint
DELETE FROM `timer_due_tenants`;
--> statement-breakpoint
INSERT INTO `timer_due_tenants` (`tenant_id`, `earliest_due_at`)
SELECT `tenant_id`, min(`due_at`) FROM `timer_schedules` WHERE `state` = 'Scheduled' GROUP BY `tenant_id`;
