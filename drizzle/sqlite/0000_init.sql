CREATE TABLE `timer_schedules` (
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
	CONSTRAINT "timer_schedules_state_check" CHECK("timer_schedules"."state" IN ('Scheduled', 'Reached', 'Cancelled')),
	CONSTRAINT "timer_schedules_due_at_check" CHECK("timer_schedules"."due_at" IS NOT NULL OR "timer_schedules"."state" = 'Cancelled')
);
--> statement-breakpoint
CREATE INDEX `timer_schedules_due_idx` ON `timer_schedules` (`due_at`,`tenant_id`,`service_call_id`) WHERE "timer_schedules"."state" = 'Scheduled';