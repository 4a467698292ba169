ALTER TABLE "timer_schedules" ADD COLUMN "trace_id" text;--> statement-breakpoint
ALTER TABLE "timer_schedules" ADD COLUMN "trace_flags" integer;--> statement-breakpoint
ALTER TABLE "timer_schedules" ADD COLUMN "trace_state" text;--> statement-breakpoint
ALTER TABLE "timer_schedules" ADD COLUMN "trace_span_id" text;