CREATE TABLE `timer_history` (
	`id` integer PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`service_call_id` text NOT NULL,
	`entry` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `timer_history_key_idx` ON `timer_history` (`tenant_id`,`service_call_id`);--> statement-breakpoint
INSERT INTO `timer_history` (`tenant_id`, `service_call_id`, `entry`)
SELECT t.`tenant_id`, t.`service_call_id`, j.`value`
FROM `timer_schedules` t, json_each(t.`history`) j
WHERE t.`history` IS NOT NULL AND json_valid(t.`history`) AND json_type(t.`history`) = 'array'
ORDER BY t.`tenant_id`, t.`service_call_id`, j.`key`;--> statement-breakpoint
ALTER TABLE `timer_schedules` DROP COLUMN `history`;
