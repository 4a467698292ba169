-- Custom migration (drizzle-kit generate --custom): the database's own random id, made once.
INSERT OR IGNORE INTO `timer_store_meta` (`key`, `value`) VALUES ('store_id', lower(hex(randomblob(16))));
