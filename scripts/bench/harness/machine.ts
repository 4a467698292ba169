import { spawnSync } from "node:child_process";
import os from "node:os";
import Database from "better-sqlite3";
import { REPO_ROOT } from "./context.js";
import { round } from "./log.js";

// The machine

export function machineInfo(): Record<string, unknown> {
  const natsBin = process.env.NATS_SERVER_BIN ?? "nats-server";
  const run = (bin: string, args: string[]): string | undefined => {
    const result = spawnSync(bin, args, { encoding: "utf8", cwd: REPO_ROOT, timeout: 10_000 });
    return result.status === 0 ? result.stdout.trim() : undefined;
  };
  let sqlite: string | undefined;
  try {
    const db = new Database(":memory:");
    sqlite = (db.prepare("SELECT sqlite_version() AS v").get() as { v: string }).v;
    db.close();
  } catch {
    sqlite = undefined;
  }
  const dirty = run("git", ["status", "--porcelain", "--", "src", "drizzle"]);
  return {
    nproc: os.availableParallelism(),
    cpu: os.cpus()[0]?.model,
    memMB: Math.round(os.totalmem() / 1048576),
    kernel: os.release(),
    node: process.version,
    natsServer: run(natsBin, ["--version"]),
    sqlite,
    gitCommit: run("git", ["rev-parse", "--short", "HEAD"]),
    srcUncommittedChanges: dirty === undefined ? undefined : dirty.split("\n").filter((l) => l !== "").length,
  };
}

export function loadAverage(): number[] {
  return os.loadavg().map((x) => round(x, 2));
}
