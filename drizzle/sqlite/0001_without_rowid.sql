-- Custom migration (drizzle-kit generate --custom): drizzle-kit cannot express WITHOUT ROWID.
-- Rebuilds timer_schedules as a WITHOUT ROWID table, same columns, constraints and index:
-- rows live in the primary-key b-tree, one b-tree write per command instead of two.
CREATE TABLE `timer_schedules_without_rowid` (
	`tenant_id` text NOT NULL,
	`service_call_id` text NOT NULL,
	`state` text NOT NULL,
	`due_at` integer,
	`data` text,
	`correlation_id` text,
	`command_ts` integer NOT NULL,
	`registered_at` integer NOT NULL,
	`reached_at` integer,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `service_call_id`),
	CONSTRAINT "timer_schedules_state_check" CHECK("state" IN ('Scheduled', 'Reached', 'Cancelled')),
	CONSTRAINT "timer_schedules_due_at_check" CHECK("due_at" IS NOT NULL OR "state" = 'Cancelled')
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `timer_schedules_without_rowid`
	SELECT `tenant_id`, `service_call_id`, `state`, `due_at`, `data`, `correlation_id`, `command_ts`,
		`registered_at`, `reached_at`, `updated_at`
	FROM `timer_schedules`;
--> statement-breakpoint
DROP TABLE `timer_schedules`;
--> statement-breakpoint
ALTER TABLE `timer_schedules_without_rowid` RENAME TO `timer_schedules`;
--> statement-breakpoint
CREATE INDEX `timer_schedules_due_idx` ON `timer_schedules` (`due_at`,`tenant_id`,`service_call_id`) WHERE "timer_schedules"."state" = 'Scheduled';
