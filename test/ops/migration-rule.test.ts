import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { fileAtRelease, filesAtRelease, previousReleaseTag } from "../support/previous-release.js";
import { MIGRATION_FOLDERS, migrationRuleBreaks } from "./migration-rule.js";

const REPO_ROOT = resolve(import.meta.dirname, "../..");

const previous = previousReleaseTag();

function migrationFiles(folder: string): string[] {
  return readdirSync(join(REPO_ROOT, folder))
    .filter((name) => name.endsWith(".sql"))
    .map((name) => `${folder}/${name}`);
}

const readMigration = (path: string): string => readFileSync(join(REPO_ROOT, path), "utf8");

const BREAKING = [
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

// docs/operations/upgrade.md: the rule, and why the previous release must keep working beside this one on Postgres.
describe("migration rule", () => {
  it("when a Postgres migration drops, renames, retypes or tightens, then the check names the statement", () => {
    for (const sql of BREAKING) expect(migrationRuleBreaks("postgres", sql), sql).not.toEqual([]);
  });

  it("when a Postgres migration only adds tables, indexes, nullable columns or columns with defaults, then it passes", () => {
    const adding = [
      readMigration("drizzle/postgres/0006_trace_context.sql"),
      readMigration("drizzle/sqlite/0011_trace_context.sql"),
      'ALTER TABLE "timer_schedules" ADD COLUMN "priority" integer DEFAULT 0 NOT NULL;',
      'ALTER TABLE "timer_schedules" ALTER COLUMN "data" DROP NOT NULL;',
      'CREATE TABLE "heartbeat" ("id" integer PRIMARY KEY NOT NULL, "at" bigint NOT NULL);\nCREATE UNIQUE INDEX "heartbeat_at" ON "heartbeat" ("at");',
      'CREATE INDEX IF NOT EXISTS "timer_schedules_dropped_idx" ON "timer_schedules" ("tenant_id");',
    ];
    for (const sql of adding) expect(migrationRuleBreaks("postgres", sql), sql).toEqual([]);
  });

  it("when a migration rebuilds a table, drops an index or renames, then it passes on SQLite and fails on Postgres", () => {
    // SQLite's upgrade is a stop and a start, its way back an export and import (CONTRACT §18, "Reshaping SQLite").
    const reshaping = [
      readMigration("drizzle/sqlite/0005_without_rowid_v2.sql"), // a table rebuilt: create, copy, drop, rename
      readMigration("drizzle/sqlite/0012_drop_due_index.sql"),
      ...BREAKING,
    ];
    for (const sql of reshaping) {
      expect(migrationRuleBreaks("sqlite", sql), sql).toEqual([]);
      expect(migrationRuleBreaks("postgres", sql), sql).not.toEqual([]);
    }
  });

  describe.skipIf(previous === undefined)(
    `migrations newer than the previous release (${previous ?? "no release tag: git fetch --tags"})`,
    () => {
      const tag = previous!;

      it("when drizzle/postgres has migrations the previous release has not, then each only adds", () => {
        const folder = MIGRATION_FOLDERS.postgres;
        const released = new Set(filesAtRelease(tag, folder));
        const added = migrationFiles(folder).filter((path) => !released.has(path));
        const breaks = added.flatMap((path) =>
          migrationRuleBreaks("postgres", readMigration(path)).map((b) => `${path}: ${b.why}: ${b.statement}`),
        );
        expect(breaks).toEqual([]);
      });

      it.each(Object.values(MIGRATION_FOLDERS))(
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
