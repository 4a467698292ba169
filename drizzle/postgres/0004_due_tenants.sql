-- Custom migration (drizzle-kit generate --custom): the tenants that have (or may have) due timers,
-- for fair firing (CONTRACT §12, docs/adr/0009-fair-firing.md). `earliest_due_at` is a lower bound of
-- the tenant's earliest Scheduled due time: a command batch lowers it in its transaction, holding
-- the tenant's advisory lock shared; a poll raises it when the tenant has nothing due, only under
-- that lock taken exclusively, so that a concurrent schedule is never hidden.
-- 9223372036854775807 = no Scheduled timer.
CREATE TABLE "timer_due_tenants" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"earliest_due_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "timer_due_tenants_earliest_idx" ON "timer_due_tenants" USING btree ("earliest_due_at","tenant_id");
--> statement-breakpoint
LOCK TABLE "timer_schedules" IN SHARE ROW EXCLUSIVE MODE;
--> statement-breakpoint
INSERT INTO "timer_due_tenants" ("tenant_id", "earliest_due_at")
SELECT "tenant_id", min("due_at") FROM "timer_schedules" WHERE "state" = 'Scheduled' GROUP BY "tenant_id";
