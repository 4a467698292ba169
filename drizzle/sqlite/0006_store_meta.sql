CREATE TABLE `timer_store_meta` (
	`key` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL
);
