-- Custom migration (drizzle-kit generate --custom): the tenants that have (or may have) due timers,
-- for fair firing (CONTRACT §12, docs/adr/0009-fair-firing.md). `earliest_due_at` is a lower bound of
-- the tenant's earliest Scheduled due time, lowered by triggers in the same transaction as every
-- write that leaves a timer Scheduled; a poll raises it (or deletes the row) when the tenant has
-- nothing due. One writer per file, so raising cannot race a write.
CREATE TABLE `timer_due_tenants` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`earliest_due_at` integer NOT NULL
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `timer_due_tenants_earliest_idx` ON `timer_due_tenants` (`earliest_due_at`, `tenant_id`);
--> statement-breakpoint
INSERT INTO `timer_due_tenants` (`tenant_id`, `earliest_due_at`)
SELECT `tenant_id`, min(`due_at`) FROM `timer_schedules` WHERE `state` = 'Scheduled' GROUP BY `tenant_id`;
--> statement-breakpoint
CREATE TRIGGER `timer_due_tenants_insert` AFTER INSERT ON `timer_schedules` WHEN new.`state` = 'Scheduled'
BEGIN
	INSERT INTO `timer_due_tenants` (`tenant_id`, `earliest_due_at`) VALUES (new.`tenant_id`, new.`due_at`)
	ON CONFLICT (`tenant_id`) DO UPDATE SET `earliest_due_at` = excluded.`earliest_due_at`
	WHERE excluded.`earliest_due_at` < `earliest_due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `timer_due_tenants_update` AFTER UPDATE OF `state`, `due_at` ON `timer_schedules` WHEN new.`state` = 'Scheduled'
BEGIN
	INSERT INTO `timer_due_tenants` (`tenant_id`, `earliest_due_at`) VALUES (new.`tenant_id`, new.`due_at`)
	ON CONFLICT (`tenant_id`) DO UPDATE SET `earliest_due_at` = excluded.`earliest_due_at`
	WHERE excluded.`earliest_due_at` < `earliest_due_at`;
END;
