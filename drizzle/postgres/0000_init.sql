CREATE TABLE "timer_schedules" (
	"tenant_id" text COLLATE "C" NOT NULL,
	"service_call_id" text COLLATE "C" NOT NULL,
	"state" text NOT NULL,
	"due_at" bigint,
	"data" text,
	"correlation_id" text,
	"command_ts" bigint NOT NULL,
	"generation" integer DEFAULT 1 NOT NULL,
	"registered_at" bigint NOT NULL,
	"reached_at" bigint,
	"updated_at" bigint NOT NULL,
	"claimed_by" text,
	"claimed_until" bigint,
	CONSTRAINT "timer_schedules_tenant_id_service_call_id_pk" PRIMARY KEY("tenant_id","service_call_id"),
	CONSTRAINT "timer_schedules_state_check" CHECK ("timer_schedules"."state" IN ('Scheduled', 'Reached', 'Cancelled')),
	CONSTRAINT "timer_schedules_due_at_check" CHECK ("timer_schedules"."due_at" IS NOT NULL OR "timer_schedules"."state" = 'Cancelled')
);
--> statement-breakpoint
CREATE INDEX "timer_schedules_due_idx" ON "timer_schedules" USING btree ("due_at","tenant_id","service_call_id") WHERE "timer_schedules"."state" = 'Scheduled';