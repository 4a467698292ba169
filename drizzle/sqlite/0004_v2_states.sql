PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_timer_schedules` (
	`tenant_id` text NOT NULL,
	`service_call_id` text NOT NULL,
	`state` text NOT NULL,
	`due_at` integer,
	`data` text,
	`correlation_id` text,
	`command_ts` integer NOT NULL,
	`generation` integer DEFAULT 1 NOT NULL,
	`registered_at` integer NOT NULL,
	`reached_at` integer,
	`updated_at` integer NOT NULL,
	`repeat` text,
	`occurrence` integer DEFAULT 1 NOT NULL,
	`max_lateness_ms` integer,
	`delivery` text,
	`created_by` text,
	`created_via` text,
	`attempt` integer DEFAULT 0 NOT NULL,
	`fired_at` integer,
	`completed_at` integer,
	`result` text,
	`last_reason` text,
	`deadline_at` integer,
	PRIMARY KEY(`tenant_id`, `service_call_id`),
	CONSTRAINT "timer_schedules_state_check" CHECK("__new_timer_schedules"."state" IN ('Scheduled', 'Reached', 'Cancelled', 'Missed', 'Fired', 'Completed', 'Failed', 'TimedOut')),
	CONSTRAINT "timer_schedules_due_at_check" CHECK("__new_timer_schedules"."due_at" IS NOT NULL OR "__new_timer_schedules"."state" = 'Cancelled')
);
--> statement-breakpoint
INSERT INTO `__new_timer_schedules`("tenant_id", "service_call_id", "state", "due_at", "data", "correlation_id", "command_ts", "generation", "registered_at", "reached_at", "updated_at", "repeat", "occurrence", "max_lateness_ms", "delivery", "created_by", "created_via", "attempt", "fired_at", "completed_at", "result", "last_reason", "deadline_at") SELECT "tenant_id", "service_call_id", "state", "due_at", "data", "correlation_id", "command_ts", "generation", "registered_at", "reached_at", "updated_at", "repeat", "occurrence", "max_lateness_ms", "delivery", "created_by", "created_via", "attempt", "fired_at", "completed_at", "result", "last_reason", "deadline_at" FROM `timer_schedules`;--> statement-breakpoint
DROP TABLE `timer_schedules`;--> statement-breakpoint
ALTER TABLE `__new_timer_schedules` RENAME TO `timer_schedules`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `timer_schedules_due_idx` ON `timer_schedules` (`due_at`,`tenant_id`,`service_call_id`) WHERE "timer_schedules"."state" = 'Scheduled';--> statement-breakpoint
CREATE INDEX `timer_schedules_tenant_state_due_idx` ON `timer_schedules` (`tenant_id`,`state`,`due_at`,`service_call_id`);--> statement-breakpoint
CREATE INDEX `timer_schedules_final_updated_idx` ON `timer_schedules` (`updated_at`) WHERE "timer_schedules"."state" IN ('Reached', 'Cancelled', 'Missed', 'Completed', 'Failed', 'TimedOut');--> statement-breakpoint
CREATE INDEX `timer_schedules_fired_deadline_idx` ON `timer_schedules` (`deadline_at`,`tenant_id`,`service_call_id`) WHERE "timer_schedules"."state" = 'Fired';