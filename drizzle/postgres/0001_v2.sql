CREATE TABLE "timer_prefix_cancels" (
	"tenant_id" text COLLATE "C" NOT NULL,
	"service_call_id_prefix" text COLLATE "C" NOT NULL,
	"command_ts" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"progress_key" text COLLATE "C",
	CONSTRAINT "timer_prefix_cancels_tenant_id_service_call_id_prefix_pk" PRIMARY KEY("tenant_id","service_call_id_prefix")
);
--> statement-breakpoint
ALTER TABLE "timer_schedules" DROP CONSTRAINT "timer_schedules_state_check";--> statement-breakpoint
ALTER TABLE "timer_schedules" ADD COLUMN "repeat" text;--> statement-breakpoint
ALTER TABLE "timer_schedules" ADD COLUMN "occurrence" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "timer_schedules" ADD COLUMN "max_lateness_ms" bigint;--> statement-breakpoint
ALTER TABLE "timer_schedules" ADD COLUMN "delivery" text;--> statement-breakpoint
ALTER TABLE "timer_schedules" ADD COLUMN "created_by" text;--> statement-breakpoint
ALTER TABLE "timer_schedules" ADD COLUMN "created_via" text;--> statement-breakpoint
ALTER TABLE "timer_schedules" ADD COLUMN "attempt" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "timer_schedules" ADD COLUMN "fired_at" bigint;--> statement-breakpoint
ALTER TABLE "timer_schedules" ADD COLUMN "completed_at" bigint;--> statement-breakpoint
ALTER TABLE "timer_schedules" ADD COLUMN "result" text;--> statement-breakpoint
ALTER TABLE "timer_schedules" ADD COLUMN "last_reason" text;--> statement-breakpoint
ALTER TABLE "timer_schedules" ADD COLUMN "deadline_at" bigint;--> statement-breakpoint
CREATE INDEX "timer_schedules_tenant_state_due_idx" ON "timer_schedules" USING btree ("tenant_id","state","due_at","service_call_id");--> statement-breakpoint
CREATE INDEX "timer_schedules_final_updated_idx" ON "timer_schedules" USING btree ("updated_at") WHERE "timer_schedules"."state" IN ('Reached', 'Cancelled', 'Missed', 'Completed', 'Failed', 'TimedOut');--> statement-breakpoint
CREATE INDEX "timer_schedules_fired_deadline_idx" ON "timer_schedules" USING btree ("deadline_at","tenant_id","service_call_id") WHERE "timer_schedules"."state" = 'Fired';--> statement-breakpoint
ALTER TABLE "timer_schedules" ADD CONSTRAINT "timer_schedules_state_check" CHECK ("timer_schedules"."state" IN ('Scheduled', 'Reached', 'Cancelled', 'Missed', 'Fired', 'Completed', 'Failed', 'TimedOut'));