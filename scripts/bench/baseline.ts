/**
 * A runnable build of an earlier version of the service, for same-run comparisons (the
 * backlog drain of the current service against v1 at commit f91ce85 and against main before the
 * write path was narrowed at commit 70fd28e; other scenarios name their own commits).
 *
 * The commit's `src/`, `drizzle/`, `package.json` and tsconfig files are extracted with
 * `git archive` into `bench-results/.baseline-<commit>/` (git-ignored), the repository's
 * `node_modules` is symlinked into it (v1's dependencies are a subset of today's, same major
 * versions), and it is compiled with the repository's TypeScript exactly as v1's `npm run build`
 * did (`tsc -p tsconfig.build.json`). A finished build is reused: the folder only appears, by a
 * rename, once the build succeeded, and it records the full commit it was built from.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { REPO_ROOT, log } from "./harness.js";

/** v1: the last commit before the v2 features (generation, recurring timers, delivery, queries, …). */
export const V1_COMMIT = "f91ce85";
/** v3 with fairness, quotas and trace context, before the write path was narrowed (the "before" of its before/after). */
export const BEFORE_WRITE_LESS_COMMIT = "70fd28e";

export interface BaselineBuild {
  /** The short commit asked for. */
  readonly commit: string;
  /** The full commit hash it resolved to. */
  readonly commitHash: string;
  /** The folder holding src/, drizzle/, dist/ and a node_modules symlink. */
  readonly dir: string;
  /** `<dir>/dist/main.js`: what `node` runs. */
  readonly entry: string;
  /** Whether this call compiled it (false: an existing build was reused). */
  readonly built: boolean;
  readonly buildS: number;
}

const STAMP = ".bench-baseline.json";

/**
 * Returns a built copy of `commit`, building it the first time. Throws with what to do when the
 * commit is not in this clone (a shallow clone, or a fork without that history) or does not compile.
 */
export function ensureBaselineBuild(commit: string = V1_COMMIT): BaselineBuild {
  const dir = resolve(REPO_ROOT, "bench-results", `.baseline-${commit}`);
  const entry = join(dir, "dist", "main.js");
  if (existsSync(dir)) {
    try {
      const stamp = JSON.parse(readFileSync(join(dir, STAMP), "utf8")) as { commitHash?: string };
      if (existsSync(entry) && typeof stamp.commitHash === "string" && stamp.commitHash.startsWith(commit)) {
        return { commit, commitHash: stamp.commitHash, dir, entry, built: false, buildS: 0 };
      }
    } catch {
      // no or unreadable stamp: rebuild
    }
  }
  const commitHash = resolveCommit(commit);
  if (existsSync(dir)) {
    log(`baseline ${commit}: ${dir} holds another or an unfinished build; rebuilding it`);
    rmSync(dir, { recursive: true, force: true });
  }

  const t0 = performance.now();
  // Built in a temporary sibling and renamed when done: an interrupted build is never reused.
  const work = `${dir}.tmp-${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    log(`baseline ${commit}: extracting ${commitHash.slice(0, 12)} into ${work}`);
    const paths = ["src", "drizzle", "package.json", "tsconfig.json", "tsconfig.build.json"];
    const tar = execFileSync("git", ["archive", "--format=tar", commitHash, ...paths], {
      cwd: REPO_ROOT,
      maxBuffer: 256 * 1024 * 1024,
    });
    const untar = spawnSync("tar", ["-x", "-C", work], { input: tar, encoding: "utf8" });
    if (untar.status !== 0) throw new Error(`tar -x failed: ${untar.stderr || untar.error?.message}`);
    symlinkSync(resolve(REPO_ROOT, "node_modules"), join(work, "node_modules"), "dir");

    // v1's `npm run build`: `tsc -p tsconfig.build.json` and the CLI made executable (not needed here).
    const tsc = resolve(REPO_ROOT, "node_modules", "typescript", "bin", "tsc");
    log(`baseline ${commit}: compiling with ${tsc} -p tsconfig.build.json`);
    const build = spawnSync(process.execPath, [tsc, "-p", join(work, "tsconfig.build.json")], {
      cwd: work,
      encoding: "utf8",
      timeout: 600_000,
    });
    if (build.status !== 0) {
      throw new Error(
        `compiling ${commit} with the repository's TypeScript failed (exit ${build.status ?? build.signal}): ${(build.stdout + build.stderr).slice(0, 3_000)}`,
      );
    }
    if (!existsSync(join(work, "dist", "main.js"))) throw new Error(`compiling ${commit} produced no dist/main.js`);
    const buildS = (performance.now() - t0) / 1000;
    writeFileSync(
      join(work, STAMP),
      `${JSON.stringify({ commit, commitHash, builtAt: new Date().toISOString(), node: process.version, buildS: Math.round(buildS) })}\n`,
    );
    try {
      renameSync(work, dir);
    } catch (error) {
      // Another bench built it meanwhile: use that one.
      if (!existsSync(entry)) throw error;
      rmSync(work, { recursive: true, force: true });
    }
    log(`baseline ${commit}: built in ${buildS.toFixed(1)} s → ${entry}`);
    return { commit, commitHash, dir, entry, built: true, buildS: Math.round(buildS * 10) / 10 };
  } catch (error) {
    rmSync(work, { recursive: true, force: true });
    throw error;
  }
}

function resolveCommit(commit: string): string {
  const found = spawnSync("git", ["rev-parse", "--verify", "--quiet", `${commit}^{commit}`], { cwd: REPO_ROOT, encoding: "utf8" });
  if (found.status === 0) return found.stdout.trim();
  const shallow = spawnSync("git", ["rev-parse", "--is-shallow-repository"], { cwd: REPO_ROOT, encoding: "utf8" }).stdout?.trim();
  throw new Error(
    `commit ${commit}${commit === V1_COMMIT ? " (the v1 baseline)" : ""} is not in this clone${shallow === "true" ? " — it is a shallow clone: run `git fetch --unshallow`" : ": fetch the full history (`git fetch origin`)"} and run the bench again`,
  );
}
