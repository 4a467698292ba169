-- Custom migration (drizzle-kit generate --custom): rows the readiness check writes and deletes in
-- one transaction (src/adapters/postgres/postgres-write-probe.ts). A commit that writes WAL is what
-- waits for a synchronous standby; SELECT 1, and even a transaction id alone, do not. The table
-- stays empty: each check deletes its own row before it commits. Additive only (docs/operations/upgrade.md).
CREATE TABLE IF NOT EXISTS "timer_health_checks" (
	"checked_by" integer NOT NULL,
	"checked_at" bigint NOT NULL
);
