CREATE TABLE `timer_prefix_cancels` (
	`tenant_id` text NOT NULL,
	`service_call_id_prefix` text NOT NULL,
	`command_ts` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`progress_key` text,
	PRIMARY KEY(`tenant_id`, `service_call_id_prefix`)
);
--> statement-breakpoint
ALTER TABLE `timer_schedules` ADD `repeat` text;--> statement-breakpoint
ALTER TABLE `timer_schedules` ADD `occurrence` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `timer_schedules` ADD `max_lateness_ms` integer;--> statement-breakpoint
ALTER TABLE `timer_schedules` ADD `delivery` text;--> statement-breakpoint
ALTER TABLE `timer_schedules` ADD `created_by` text;--> statement-breakpoint
ALTER TABLE `timer_schedules` ADD `created_via` text;--> statement-breakpoint
ALTER TABLE `timer_schedules` ADD `attempt` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `timer_schedules` ADD `fired_at` integer;--> statement-breakpoint
ALTER TABLE `timer_schedules` ADD `completed_at` integer;--> statement-breakpoint
ALTER TABLE `timer_schedules` ADD `result` text;--> statement-breakpoint
ALTER TABLE `timer_schedules` ADD `last_reason` text;--> statement-breakpoint
ALTER TABLE `timer_schedules` ADD `deadline_at` integer;--> statement-breakpoint
CREATE INDEX `timer_schedules_tenant_state_due_idx` ON `timer_schedules` (`tenant_id`,`state`,`due_at`,`service_call_id`);--> statement-breakpoint
CREATE INDEX `timer_schedules_final_updated_idx` ON `timer_schedules` (`updated_at`) WHERE "timer_schedules"."state" IN ('Reached', 'Cancelled', 'Missed', 'Completed', 'Failed', 'TimedOut');--> statement-breakpoint
CREATE INDEX `timer_schedules_fired_deadline_idx` ON `timer_schedules` (`deadline_at`,`tenant_id`,`service_call_id`) WHERE "timer_schedules"."state" = 'Fired';