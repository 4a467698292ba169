/**
 * The migration rule of docs/operations/upgrade.md (CONTRACT §18). A release's Postgres migrations
 * only add, because the previous release keeps running beside them during a rolling upgrade: what it
 * reads or writes is dropped, renamed or made stricter one release later, never in the same one.
 * SQLite migrations may reshape: one instance owns a SQLite file, so its upgrade is a stop and a
 * start, and its way back is an export imported by the previous release into a fresh file.
 */

export type MigrationStore = "postgres" | "sqlite";

/** Where drizzle.postgres.config.ts and drizzle.config.ts write each store's migrations. */
export const MIGRATION_FOLDERS: Readonly<Record<MigrationStore, string>> = {
  postgres: "drizzle/postgres",
  sqlite: "drizzle/sqlite",
};

/** The stores on which two releases share one database during an upgrade, so whose migrations only add. */
const ADD_ONLY: ReadonlySet<MigrationStore> = new Set(["postgres"]);

interface Forbidden {
  readonly pattern: RegExp;
  readonly why: string;
}

const FORBIDDEN: readonly Forbidden[] = [
  // DROP NOT NULL only loosens a column; every other DROP removes something the previous release may use.
  {
    pattern: /\bDROP\b(?!\s+NOT\s+NULL\b)/,
    why: "drops something the previous release may read, write or need (an index its queries use)",
  },
  { pattern: /\bRENAME\b/, why: "renames something the previous release names" },
  { pattern: /\bSET\s+NOT\s+NULL\b/, why: "makes a column stricter: the previous release may write null there" },
  { pattern: /\bALTER\s+COLUMN\b.*\b(?:SET\s+DATA\s+)?TYPE\b/, why: "changes a column's type under the previous release" },
  { pattern: /\bALTER\s+TYPE\b/, why: "changes a type the previous release writes" },
  {
    pattern: /\bADD\s+CONSTRAINT\b|\bADD\s+(?:PRIMARY\s+KEY|UNIQUE|CHECK|FOREIGN\s+KEY)\b/,
    why: "adds a constraint the previous release's writes may break",
  },
  { pattern: /\bTRUNCATE\b|\bDELETE\s+FROM\b/, why: "deletes rows the previous release reads" },
];

/** `ADD [COLUMN] … NOT NULL` with no DEFAULT: the previous release's inserts leave it out and fail. */
const ADD_COLUMN = /\bADD\s+(?:COLUMN\s+)?(?:IF\s+NOT\s+EXISTS\s+)?["`]?\w+["`]?\s/;

/** A unique index on a table the same migration did not create: stricter for the previous release's writes. */
const UNIQUE_INDEX = /\bCREATE\s+UNIQUE\s+INDEX\b.*\bON\s+["`]?(\w+)["`]?/;
const CREATED_TABLE = /\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?["`]?(\w+)["`]?/g;

export interface RuleBreak {
  readonly statement: string;
  readonly why: string;
}

/** The statements of one migration file (drizzle-kit's `--> statement-breakpoint` or `;`), comments removed, on one line each. */
export function migrationStatements(sql: string): string[] {
  return sql
    .replace(/--[^\n]*/g, " ")
    .split(";")
    .map((statement) => statement.replace(/\s+/g, " ").trim())
    .filter((statement) => statement !== "");
}

/** How one migration file of `store` breaks the rule; empty when it only adds, or when the store may reshape. */
export function migrationRuleBreaks(store: MigrationStore, sql: string): RuleBreak[] {
  if (!ADD_ONLY.has(store)) return [];
  const statements = migrationStatements(sql);
  const created = new Set(statements.flatMap((s) => [...s.matchAll(CREATED_TABLE)].map((m) => m[1]!.toLowerCase())));
  const breaks: RuleBreak[] = [];
  for (const statement of statements) {
    const upper = statement.toUpperCase();
    for (const rule of FORBIDDEN) if (rule.pattern.test(upper)) breaks.push({ statement, why: rule.why });
    if (ADD_COLUMN.test(upper) && /\bALTER\s+TABLE\b/.test(upper) && /\bNOT\s+NULL\b/.test(upper) && !/\bDEFAULT\b/.test(upper)) {
      breaks.push({ statement, why: "adds a NOT NULL column without a default: the previous release's inserts leave it out" });
    }
    const unique = UNIQUE_INDEX.exec(statement);
    if (unique !== null && !created.has(unique[1]!.toLowerCase())) {
      breaks.push({ statement, why: "adds a unique index to an existing table: the previous release's writes may break it" });
    }
  }
  return breaks;
}
