import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { encodeHeader, encodeRecord } from "../../src/app/transfer/transfer-lines.js";
import { fixtureRecords, withoutHistory } from "../support/transfer-fixtures.js";

/** The service's CLI (`npm run build` first). */
const CLI = resolve(import.meta.dirname, "../../dist/cli/main.js");

/** `timer-service export | import` as an operator runs them (CONTRACT §18), on SQLite files. */
const run = promisify(execFile);
const folder = mkdtempSync(join(tmpdir(), "timer-transfer-cli-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const T0 = Date.parse("2026-11-28T12:00:00.000Z");

async function cli(dbPath: string, args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = run(process.execPath, [CLI, ...args], { env: { ...process.env, TIMER_STORE: "sqlite", TIMER_DB_PATH: dbPath } });
  if (input !== undefined) child.child.stdin!.end(input);
  try {
    const { stdout, stderr } = await child;
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const fileOf = (...lines: string[]) => `${lines.join("\n")}\n`;
const header = encodeHeader({ exportedAtMs: T0, store: "sqlite" });

describe("timer-service export and import", () => {
  it("when a file is imported from standard input and exported to a file, then the export has the same lines and a second import keeps all", async () => {
    const records = fixtureRecords(T0);
    const db = join(folder, "a.db");
    const imported = await cli(db, ["import"], fileOf(header, ...records.map((record) => encodeRecord(record))));
    expect(imported.code).toBe(0);
    expect(JSON.parse(imported.stdout)).toEqual({
      created: records.length - 1,
      replaced: 0,
      kept: 0,
      prefixCancels: { created: 1, replaced: 0, kept: 0 },
      lines: records.length + 1,
    });
    const out = join(folder, "a.ndjson");
    const exported = await cli(db, ["export", "--out", out, "--history"]);
    expect(exported.code).toBe(0);
    expect(exported.stderr).toContain(`exported ${records.length - 1} timers and 1 prefix cancels from sqlite ${db} to ${out}`);
    const lines = readFileSync(out, "utf8").split("\n");
    expect(JSON.parse(lines[0]!)).toMatchObject({ format: "timer-service-export", version: 1, store: "sqlite" });
    expect(lines.slice(1)).toEqual([...records.map((record) => encodeRecord(record)), ""]);
    const again = await cli(db, ["import", "--in", out]);
    expect(JSON.parse(again.stdout)).toMatchObject({ created: 0, replaced: 0, kept: records.length - 1 });
    const tenant = await cli(db, ["export", "--tenant", "globex"]);
    expect(tenant.stdout.trim().split("\n").slice(1)).toEqual(
      records
        .filter((r) => (r.kind === "timer" ? r.timer.tenantId : r.prefixCancel.tenantId) === "globex")
        .map((record) => encodeRecord(withoutHistory(record))),
    );
  });

  it("when a line is bad, then import exits non-zero naming the line and what is wrong, and writes nothing of its batch", async () => {
    const db = join(folder, "b.db");
    const [first, second] = fixtureRecords(T0).map((record) => encodeRecord(record));
    const bad = JSON.stringify({ ...JSON.parse(second!), dueAt: "tomorrow" });
    const result = await cli(db, ["import"], fileOf(header, first!, bad));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'timer-service: line 3: dueAt: must be an ISO 8601 date-time with an offset, like 2026-12-01T09:00:00.000Z, got "tomorrow"',
    );
    expect(result.stderr).toContain("nothing of that line's batch was written");
    expect((await cli(db, ["export"])).stdout.trim().split("\n")).toHaveLength(1);
  });

  it("when the header is missing or of another version, then import exits non-zero on line 1", async () => {
    const db = join(folder, "c.db");
    const [first] = fixtureRecords(T0).map((record) => encodeRecord(record));
    expect((await cli(db, ["import"], fileOf(first!))).stderr).toContain("line 1: not a timer-service export");
    expect((await cli(db, ["import"], fileOf('{"format":"timer-service-export","version":2}', first!))).stderr).toContain(
      "line 1: unknown version 2: this release reads version 1",
    );
    expect((await cli(db, ["import"], "")).stderr).toContain("line 1: missing header");
  });

  it("when the arguments do not fit, then the command says so without touching a store", async () => {
    const db = join(folder, "never.db");
    expect(await cli(db, ["export", "--tenant", "no spaces"])).toMatchObject({ code: 2 });
    expect((await cli(db, ["export"])).stderr).toContain(`no SQLite store at ${db} (TIMER_DB_PATH)`);
    expect((await cli(db, ["import", "--in", join(folder, "missing.ndjson")])).stderr).toContain("ENOENT");
    expect((await cli(db, ["backup"])).stderr).toContain("backup needs --out FILE");
  });
});
