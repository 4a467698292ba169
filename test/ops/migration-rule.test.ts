import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { fileAtRelease, filesAtRelease, previousReleaseTag } from "../support/previous-release.js";
import { migrationRuleBreaks } from "./migration-rule.js";

const REPO_ROOT = resolve(import.meta.dirname, "../..");
/** drizzle.config.ts (SQLite) and drizzle.postgres.config.ts (Postgres) write here. */
const MIGRATION_FOLDERS = ["drizzle/sqlite", "drizzle/postgres"];

const previous = previousReleaseTag();

function migrationFiles(folder: string): string[] {
  return readdirSync(join(REPO_ROOT, folder))
    .filter((name) => name.endsWith(".sql"))
    .map((name) => `${folder}/${name}`);
}

// docs/operations/upgrade.md: the rule, and why the previous release must keep working beside this one.
describe("migration rule", () => {
  it("when a migration drops, renames, retypes or tightens, then the check names the statement", () => {
    const breaking = [
      'DROP INDEX "timer_schedules_due_idx";', // Postgres 0007, released before the rule
      'ALTER TABLE "timer_schedules" DROP COLUMN "data";',
      "ALTER TABLE `timer_schedules` RENAME COLUMN `data` TO `payload`;",
      "ALTER TABLE `__new_timer_schedules` RENAME TO `timer_schedules`;",
      'ALTER TABLE "timer_schedules" ALTER COLUMN "trace_id" SET NOT NULL;',
      'ALTER TABLE "timer_schedules" ALTER COLUMN "occurrence" SET DATA TYPE bigint;',
      'ALTER TABLE "timer_schedules" ADD COLUMN "owner" text NOT NULL;',
      'ALTER TABLE "timer_schedules" ADD CONSTRAINT "due_positive" CHECK ("due_at" > 0);',
      'CREATE UNIQUE INDEX "by_correlation" ON "timer_schedules" ("correlation_id");',
      "ALTER TYPE \"timer_state\" RENAME VALUE 'Reached' TO 'Fired';",
      "DELETE FROM `timer_schedules` WHERE state = 'Cancelled';",
    ];
    for (const sql of breaking) expect(migrationRuleBreaks(sql), sql).not.toEqual([]);
  });

  it("when a migration only adds tables, indexes, nullable columns or columns with defaults, then it passes", () => {
    const adding = [
      readFileSync(join(REPO_ROOT, "drizzle/postgres/0006_trace_context.sql"), "utf8"),
      readFileSync(join(REPO_ROOT, "drizzle/sqlite/0011_trace_context.sql"), "utf8"),
      'ALTER TABLE "timer_schedules" ADD COLUMN "priority" integer DEFAULT 0 NOT NULL;',
      'ALTER TABLE "timer_schedules" ALTER COLUMN "data" DROP NOT NULL;',
      'CREATE TABLE "heartbeat" ("id" integer PRIMARY KEY NOT NULL, "at" bigint NOT NULL);\nCREATE UNIQUE INDEX "heartbeat_at" ON "heartbeat" ("at");',
      'CREATE INDEX IF NOT EXISTS "timer_schedules_dropped_idx" ON "timer_schedules" ("tenant_id");',
    ];
    for (const sql of adding) expect(migrationRuleBreaks(sql), sql).toEqual([]);
  });

  describe.skipIf(previous === undefined)(
    `migrations newer than the previous release (${previous ?? "no release tag: git fetch --tags"})`,
    () => {
      const tag = previous!;

      it.each(MIGRATION_FOLDERS)("when %s has migrations the previous release has not, then each only adds", (folder) => {
        const released = new Set(filesAtRelease(tag, folder));
        const added = migrationFiles(folder).filter((path) => !released.has(path));
        const breaks = added.flatMap((path) =>
          migrationRuleBreaks(readFileSync(join(REPO_ROOT, path), "utf8")).map((b) => `${path}: ${b.why}: ${b.statement}`),
        );
        expect(breaks).toEqual([]);
      });

      it.each(MIGRATION_FOLDERS)(
        "when %s is compared with the previous release, then no released migration was edited or removed",
        (folder) => {
          // A deployment has applied the released files already: an edit never runs there, a removal breaks the journal.
          const changed = filesAtRelease(tag, folder).filter(
            (path) =>
              !existsSync(join(REPO_ROOT, path)) ||
              (path.endsWith(".sql") && readFileSync(join(REPO_ROOT, path), "utf8") !== fileAtRelease(tag, path)),
          );
          expect(changed).toEqual([]);
          const journal = (text: string): string[] => (JSON.parse(text) as { entries: { tag: string }[] }).entries.map((e) => e.tag);
          const journalPath = `${folder}/meta/_journal.json`;
          const now = journal(readFileSync(join(REPO_ROOT, journalPath), "utf8"));
          const then = journal(fileAtRelease(tag, journalPath));
          expect(now.slice(0, then.length)).toEqual(then);
        },
      );
    },
  );
});
