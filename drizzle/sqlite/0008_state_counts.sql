-- Custom migration (drizzle-kit generate --custom): counts of timers per tenant and state, kept by
-- triggers in the same transaction as every write (commands, firings, deadlines, prefix sweeps,
-- retention deletes), so that `stats` (CONTRACT §9) reads a few rows instead of counting a
-- tenant's whole index range (~100 ms at 1,000,000 timers, on the service's only thread).
-- `duration_sum_ms` / `duration_count` cover Completed timers with both instants (average duration).
CREATE TABLE `timer_state_counts` (
	`tenant_id` text NOT NULL,
	`state` text NOT NULL,
	`count` integer NOT NULL,
	`duration_sum_ms` integer NOT NULL,
	`duration_count` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `state`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `timer_state_counts` (`tenant_id`, `state`, `count`, `duration_sum_ms`, `duration_count`)
SELECT `tenant_id`, `state`, count(*),
	coalesce(sum(CASE WHEN `state` = 'Completed' AND `completed_at` IS NOT NULL AND `fired_at` IS NOT NULL THEN `completed_at` - `fired_at` END), 0),
	count(CASE WHEN `state` = 'Completed' AND `completed_at` IS NOT NULL AND `fired_at` IS NOT NULL THEN 1 END)
FROM `timer_schedules` GROUP BY `tenant_id`, `state`;
--> statement-breakpoint
CREATE TRIGGER `timer_state_counts_insert` AFTER INSERT ON `timer_schedules`
BEGIN
	INSERT INTO `timer_state_counts` (`tenant_id`, `state`, `count`, `duration_sum_ms`, `duration_count`)
	VALUES (new.`tenant_id`, new.`state`, 1,
		CASE WHEN new.`state` = 'Completed' AND new.`completed_at` IS NOT NULL AND new.`fired_at` IS NOT NULL THEN new.`completed_at` - new.`fired_at` ELSE 0 END,
		CASE WHEN new.`state` = 'Completed' AND new.`completed_at` IS NOT NULL AND new.`fired_at` IS NOT NULL THEN 1 ELSE 0 END)
	ON CONFLICT (`tenant_id`, `state`) DO UPDATE SET `count` = `count` + 1,
		`duration_sum_ms` = `duration_sum_ms` + excluded.`duration_sum_ms`, `duration_count` = `duration_count` + excluded.`duration_count`;
END;
--> statement-breakpoint
CREATE TRIGGER `timer_state_counts_update` AFTER UPDATE OF `state`, `completed_at`, `fired_at` ON `timer_schedules`
WHEN old.`state` IS NOT new.`state`
	OR (old.`state` = 'Completed' AND (old.`completed_at` IS NOT new.`completed_at` OR old.`fired_at` IS NOT new.`fired_at`))
	OR (new.`state` = 'Completed' AND (old.`completed_at` IS NOT new.`completed_at` OR old.`fired_at` IS NOT new.`fired_at`))
BEGIN
	UPDATE `timer_state_counts` SET `count` = `count` - 1,
		`duration_sum_ms` = `duration_sum_ms` - CASE WHEN old.`state` = 'Completed' AND old.`completed_at` IS NOT NULL AND old.`fired_at` IS NOT NULL THEN old.`completed_at` - old.`fired_at` ELSE 0 END,
		`duration_count` = `duration_count` - CASE WHEN old.`state` = 'Completed' AND old.`completed_at` IS NOT NULL AND old.`fired_at` IS NOT NULL THEN 1 ELSE 0 END
	WHERE `tenant_id` = old.`tenant_id` AND `state` = old.`state`;
	INSERT INTO `timer_state_counts` (`tenant_id`, `state`, `count`, `duration_sum_ms`, `duration_count`)
	VALUES (new.`tenant_id`, new.`state`, 1,
		CASE WHEN new.`state` = 'Completed' AND new.`completed_at` IS NOT NULL AND new.`fired_at` IS NOT NULL THEN new.`completed_at` - new.`fired_at` ELSE 0 END,
		CASE WHEN new.`state` = 'Completed' AND new.`completed_at` IS NOT NULL AND new.`fired_at` IS NOT NULL THEN 1 ELSE 0 END)
	ON CONFLICT (`tenant_id`, `state`) DO UPDATE SET `count` = `count` + 1,
		`duration_sum_ms` = `duration_sum_ms` + excluded.`duration_sum_ms`, `duration_count` = `duration_count` + excluded.`duration_count`;
END;
--> statement-breakpoint
CREATE TRIGGER `timer_state_counts_delete` AFTER DELETE ON `timer_schedules`
BEGIN
	UPDATE `timer_state_counts` SET `count` = `count` - 1,
		`duration_sum_ms` = `duration_sum_ms` - CASE WHEN old.`state` = 'Completed' AND old.`completed_at` IS NOT NULL AND old.`fired_at` IS NOT NULL THEN old.`completed_at` - old.`fired_at` ELSE 0 END,
		`duration_count` = `duration_count` - CASE WHEN old.`state` = 'Completed' AND old.`completed_at` IS NOT NULL AND old.`fired_at` IS NOT NULL THEN 1 ELSE 0 END
	WHERE `tenant_id` = old.`tenant_id` AND `state` = old.`state`;
END;
