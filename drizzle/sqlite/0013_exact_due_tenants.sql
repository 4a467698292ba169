-- Custom migration (drizzle-kit generate --custom): the writer keeps `timer_due_tenants` exact from
-- here on (every write that may raise a tenant's earliest Scheduled due time sets its entry in the
-- same transaction), and the fair claim reads it without correcting it. Entries left lower than
-- their tenant's timers (a cancel, a later due time) are set exact once: one index seek per tenant.
DELETE FROM `timer_due_tenants` WHERE NOT EXISTS (
	SELECT 1 FROM `timer_schedules` s WHERE s.`tenant_id` = `timer_due_tenants`.`tenant_id` AND s.`state` = 'Scheduled'
);
--> statement-breakpoint
UPDATE `timer_due_tenants` SET `earliest_due_at` = (
	SELECT min(s.`due_at`) FROM `timer_schedules` s WHERE s.`tenant_id` = `timer_due_tenants`.`tenant_id` AND s.`state` = 'Scheduled'
);
