import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const REPO_ROOT = resolve(import.meta.dirname, "../..");
/** Releases are tags `v<major>.<minor>.<patch>` (docs/changelog.md). */
const RELEASE_TAGS = "v[0-9]*";

function git(args: readonly string[]): { ok: boolean; out: string } {
  const run = spawnSync("git", args, { cwd: REPO_ROOT, encoding: "utf8" });
  return { ok: run.status === 0, out: (run.stdout ?? "").trim() };
}

/**
 * The release before this build: `TIMER_PREVIOUS_RELEASE` when set, else the newest release tag
 * reachable from HEAD — except a tag on HEAD itself when the work tree is clean (then this build *is*
 * that release, and the one before it is meant). A clone without tags (CI clones main only) takes
 * the newest release of docs/releases.json whose commit is in its history, by commit. Undefined when
 * there is none.
 */
export function previousReleaseTag(): string | undefined {
  if (process.env.TIMER_PREVIOUS_RELEASE) return process.env.TIMER_PREVIOUS_RELEASE;
  const clean = git(["status", "--porcelain", "--untracked-files=no"]).out === "";
  const atHead = clean ? git(["tag", "--points-at", "HEAD", "--list", RELEASE_TAGS]).out.split("\n").filter(Boolean) : [];
  const described = git(["describe", "--tags", "--abbrev=0", "--match", RELEASE_TAGS, ...atHead.flatMap((t) => ["--exclude", t]), "HEAD"]);
  if (described.ok && described.out !== "") return described.out;
  const head = git(["rev-parse", "HEAD"]).out;
  const releases = JSON.parse(readFileSync(join(REPO_ROOT, "docs", "releases.json"), "utf8")) as { tag: string; commit: string }[];
  const inHistory = releases.filter(({ commit }) => !(clean && commit === head) && git(["merge-base", "--is-ancestor", commit, "HEAD"]).ok);
  return inHistory.at(-1)?.commit;
}

/** The files under `folder` as they are in `tag`. */
export function filesAtRelease(tag: string, folder: string): string[] {
  return git(["ls-tree", "-r", "--name-only", tag, "--", folder]).out.split("\n").filter(Boolean);
}

/** One file's text as it is in `tag`. */
export function fileAtRelease(tag: string, path: string): string {
  return execFileSync("git", ["show", `${tag}:${path}`], { cwd: REPO_ROOT, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
}

export interface ReleaseBuild {
  readonly tag: string;
  readonly commit: string;
  /** `node <entry>` runs that release's service; its working folder must be `dir` (its drizzle/). */
  readonly dir: string;
  readonly entry: string;
  /** `node <cli>` runs that release's `timer-service` command line (export, import, backup). */
  readonly cli: string;
}

const STAMP = ".release-build.json";

/**
 * A built copy of release `tag`, as scripts/bench/baseline.ts builds its baselines: the tag's src/,
 * drizzle/, package.json and tsconfig files extracted with `git archive` into
 * node_modules/.cache/timer-service-releases/<commit>/, the repository's node_modules linked into it
 * (a release uses the dependencies of the next one, same major versions), compiled with the
 * repository's TypeScript. A finished build is reused: its folder only appears, by a rename, once the
 * build succeeded. Throws with the reason when the tag is unknown or does not compile.
 */
export function ensureReleaseBuild(tag: string): ReleaseBuild {
  const resolved = git(["rev-parse", "--verify", "--quiet", `${tag}^{commit}`]);
  if (!resolved.ok) throw new Error(`release ${tag} is not in this clone: fetch its tags (git fetch --tags)`);
  const commit = resolved.out;
  const dir = resolve(REPO_ROOT, "node_modules", ".cache", "timer-service-releases", commit);
  const entry = join(dir, "dist", "main.js");
  const cli = join(dir, "dist", "cli", "main.js");
  if (existsSync(entry) && existsSync(join(dir, STAMP))) return { tag, commit, dir, entry, cli };

  const work = `${dir}.tmp-${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const paths = ["src", "drizzle", "package.json", "tsconfig.json", "tsconfig.build.json"];
    const tar = execFileSync("git", ["archive", "--format=tar", commit, ...paths], { cwd: REPO_ROOT, maxBuffer: 256 * 1024 * 1024 });
    const untar = spawnSync("tar", ["-x", "-C", work], { input: tar, encoding: "utf8" });
    if (untar.status !== 0) throw new Error(`tar -x failed: ${untar.stderr || untar.error?.message}`);
    symlinkSync(resolve(REPO_ROOT, "node_modules"), join(work, "node_modules"), "dir");
    const tsc = resolve(REPO_ROOT, "node_modules", "typescript", "bin", "tsc");
    const build = spawnSync(process.execPath, [tsc, "-p", join(work, "tsconfig.build.json")], {
      cwd: work,
      encoding: "utf8",
      timeout: 600_000,
    });
    if (build.status !== 0) throw new Error(`compiling ${tag} failed: ${(build.stdout + build.stderr).slice(0, 3_000)}`);
    writeFileSync(join(work, STAMP), `${JSON.stringify({ tag, commit, builtAt: new Date().toISOString() })}\n`);
    try {
      renameSync(work, dir);
    } catch (error) {
      // Another test file built it meanwhile: use that one.
      if (!existsSync(entry)) throw error;
      rmSync(work, { recursive: true, force: true });
    }
    return { tag, commit, dir, entry, cli };
  } catch (error) {
    rmSync(work, { recursive: true, force: true });
    throw error;
  }
}

/**
 * The previous release's build, or why there is none: a clone with no release before this build
 * (the tests that need one skip). A release that is there but does not build throws: those tests
 * fail, since the repository's dependencies must still build the previous release of the same major.
 */
export function previousReleaseBuild(): { build: ReleaseBuild } | { reason: string } {
  const tag = previousReleaseTag();
  if (tag === undefined) return { reason: "no release tag before this build in this clone (git fetch --tags)" };
  return { build: ensureReleaseBuild(tag) };
}
