/**
 * Which index of the SQLite store each statement uses: opens a migrated store on a temporary file,
 * records the SQL of every statement the store, its queries and its retention prepare, and prints
 * SQLite's EXPLAIN QUERY PLAN of each, then per index the statements whose plan names it. Evidence
 * for narrowing the write path (an index no plan names costs a b-tree insert per command for
 * nothing); the plans the service depends on are asserted by test/contract/sqlite-timer-queries.test.ts.
 *
 *   npx tsx scripts/bench/sqlite-index-usage.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { openSqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import { SQLITE_QUERY_SQL } from "../../src/adapters/sqlite/sqlite-timer-queries.js";
import { SQLITE_RETENTION_SQL } from "../../src/adapters/sqlite/sqlite-timer-retention.js";

const prepared = new Set<string>();
const prepare = Database.prototype.prepare;
Database.prototype.prepare = function (this: Database.Database, source: string) {
  prepared.add(source.replace(/\s+/g, " ").trim());
  return prepare.call(this, source);
} as typeof prepare;

const dir = mkdtempSync(join(tmpdir(), "index-usage-"));
try {
  const store = await openSqliteTimerStore({ path: join(dir, "timers.db") });
  for (const sql of [...Object.values(SQLITE_QUERY_SQL), ...Object.values(SQLITE_RETENTION_SQL)])
    prepared.add(sql.replace(/\s+/g, " ").trim());
  const db = store.database;
  const indexes = (
    db.prepare("SELECT name, tbl_name AS tableName FROM sqlite_master WHERE type = 'index'").all() as { name: string; tableName: string }[]
  )
    .filter((index) => !index.name.startsWith("sqlite_autoindex"))
    .map((index) => `${index.tableName}.${index.name}`);
  const usedBy = new Map<string, string[]>(indexes.map((index) => [index, []]));
  const plans: { sql: string; plan: string[] }[] = [];
  for (const sql of prepared) {
    // Migrations (drizzle's files quote identifiers with backticks) run once, not per command.
    if (!/^(SELECT|UPDATE|DELETE|INSERT|WITH)/i.test(sql) || /sqlite_master|__drizzle_migrations|`/.test(sql)) continue;
    let plan: string[];
    try {
      const statement = db.prepare(`EXPLAIN QUERY PLAN ${sql}`);
      const named = [...sql.matchAll(/[@:$]([A-Za-z_]\w*)/g)].map((m) => m[1]!);
      const positional = (sql.match(/\?/g) ?? []).length;
      const rows = (
        named.length > 0
          ? statement.all(Object.fromEntries(named.map((n) => [n, null])))
          : statement.all(...new Array(positional).fill(null))
      ) as {
        detail: string;
      }[];
      plan = rows.map((row) => row.detail);
    } catch (error) {
      plan = [`(not explained: ${error instanceof Error ? error.message : String(error)})`];
    }
    plans.push({ sql, plan });
    for (const index of indexes) if (plan.some((step) => step.includes(index.split(".")[1]!))) usedBy.get(index)!.push(sql.slice(0, 90));
  }
  store.close();
  for (const { sql, plan } of plans) process.stdout.write(`${sql.slice(0, 160)}\n    ${plan.join("\n    ")}\n`);
  process.stdout.write("\nindex → statements whose plan uses it\n");
  for (const [index, statements] of usedBy)
    process.stdout.write(`${index}: ${statements.length}\n${statements.map((s) => `    ${s}\n`).join("")}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
