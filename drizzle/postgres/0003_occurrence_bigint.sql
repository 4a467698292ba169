ALTER TABLE "timer_schedules" ALTER COLUMN "occurrence" SET DATA TYPE bigint;--> statement-breakpoint
ALTER TABLE "timer_schedules" ALTER COLUMN "occurrence" SET DEFAULT 1;