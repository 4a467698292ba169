ALTER TABLE `timer_schedules` ADD `trace_id` text;--> statement-breakpoint
ALTER TABLE `timer_schedules` ADD `trace_flags` integer;--> statement-breakpoint
ALTER TABLE `timer_schedules` ADD `trace_state` text;--> statement-breakpoint
ALTER TABLE `timer_schedules` ADD `trace_span_id` text;