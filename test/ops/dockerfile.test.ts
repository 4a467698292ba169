import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot, runCommand } from "./ops-support.js";

// No Docker engine here: these tests read the Dockerfile and replay its build step on the files it
// copies, so a COPY list or .dockerignore that misses what the build needs fails here rather than
// at `docker build`.

interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

/** Continuation lines joined, comments dropped. */
function instructions(dockerfile: string): Instruction[] {
  const joined = dockerfile
    .split("\n")
    .filter((line) => !/^\s*#/.test(line))
    .join("\n")
    .replace(/\\\n/g, " ");
  return joined.split("\n").flatMap((line) => {
    const match = /^\s*([A-Z]+)\s+(.*)$/.exec(line);
    return match === null ? [] : [{ keyword: match[1]!, args: match[2]!.trim() }];
  });
}

/** Global ARGs (before the first FROM) with their defaults substituted into `text`. */
function expandGlobalArgs(all: readonly Instruction[], text: string): string {
  const firstFrom = all.findIndex((i) => i.keyword === "FROM");
  const args = new Map(
    all
      .slice(0, firstFrom)
      .filter((i) => i.keyword === "ARG")
      .map((i) => i.args.split("=") as [string, string]),
  );
  return text.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, braced?: string, bare?: string) => args.get((braced ?? bare)!) ?? "");
}

/** Instructions per stage; global ARGs (before the first FROM) are left out. */
function stages(dockerfile: string): Instruction[][] {
  const result: Instruction[][] = [];
  for (const instruction of instructions(dockerfile)) {
    if (instruction.keyword === "FROM") result.push([]);
    result[result.length - 1]?.push(instruction);
  }
  return result;
}

/** Context paths copied by a stage's COPY instructions (not those copied --from another stage). */
function contextSources(stage: readonly Instruction[]): string[] {
  return stage
    .filter((i) => i.keyword === "COPY" && !i.args.includes("--from="))
    .flatMap((i) => {
      const words = i.args.split(/\s+/).filter((w) => !w.startsWith("--"));
      return words.slice(0, -1);
    });
}

/**
 * Whether a node engines range (`20.x || 22.x`, `>=18`, `>= 22.x`, `^14.13.1 || >=16.0.0`, `*`)
 * accepts `major`.0.0 … `major`.x: enough for the ranges in package-lock.json, without a semver
 * dependency.
 */
function satisfiesMajor(range: string, major: number): boolean {
  return range.split("||").some((alternative) =>
    alternative
      .trim()
      .replace(/([<>=^~]+)\s+/g, "$1")
      .split(/\s+/)
      .every((comparator) => {
        const match = /^([<>]=?|=|\^|~)?v?(\d+|\*|x)/.exec(comparator);
        if (comparator === "" || match === null) return comparator === "" || comparator === "*";
        const [, op = "", first = "*"] = match;
        if (first === "*" || first === "x") return true;
        const bound = Number(first);
        switch (op) {
          case ">=":
            return major >= bound;
          case ">":
            return major > bound || (major === bound && /\.[1-9]/.test(comparator));
          case "<":
            return major < bound;
          case "<=":
            return major <= bound;
          default:
            return major === bound; // "=", "^", "~" and a bare "N.x"
        }
      }),
  );
}

const dockerfile = readFileSync(join(repoRoot, "Dockerfile"), "utf8");
/** The Node.js major the image runs: the default of the Dockerfile's `ARG NODE_MAJOR`. */
const IMAGE_NODE_MAJOR = Number(/^ARG NODE_MAJOR=(\d+)$/m.exec(dockerfile)?.[1]);
const [builder, runtime] = stages(dockerfile) as [Instruction[], Instruction[]];
const ignored = readFileSync(join(repoRoot, ".dockerignore"), "utf8")
  .split("\n")
  .map((l) => l.trim())
  .filter((l) => l !== "" && !l.startsWith("#") && !l.startsWith("!"));

describe("Dockerfile", () => {
  const tempDirs: string[] = [];
  afterAll(() => tempDirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it("when read, then it has a builder and a runtime stage on the same Node.js LTS image (node:26-trixie-slim)", () => {
    const all = instructions(dockerfile);
    expect(expandGlobalArgs(all, builder[0]!.args)).toBe(`node:${IMAGE_NODE_MAJOR}-trixie-slim AS builder`);
    expect(expandGlobalArgs(all, runtime[0]!.args)).toBe(`node:${IMAGE_NODE_MAJOR}-trixie-slim AS runtime`);
    // Even majors are the LTS lines.
    expect(IMAGE_NODE_MAJOR % 2).toBe(0);
  });

  it("when the image's Node.js major is checked against the lockfile, then every runtime dependency (better-sqlite3's native build included) accepts it", () => {
    const lock = JSON.parse(readFileSync(join(repoRoot, "package-lock.json"), "utf8")) as {
      packages: Record<string, { dev?: boolean; engines?: { node?: string } }>;
    };
    expect(lock.packages["node_modules/better-sqlite3"]?.engines?.node).toContain(`${IMAGE_NODE_MAJOR}.x`);
    for (const [path, entry] of Object.entries(lock.packages)) {
      const range = entry.engines?.node;
      if (path === "" || entry.dev === true || range === undefined) continue;
      expect(satisfiesMajor(range, IMAGE_NODE_MAJOR), `${path} engines.node "${range}"`).toBe(true);
    }
  });

  it("when engines is read, then it names both the tested Node.js major (this run's) and the image's", () => {
    const engines = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { engines: { node: string } }).engines.node;
    const testedMajor = Number(process.versions.node.split(".")[0]);

    expect(satisfiesMajor(engines, testedMajor), `engines "${engines}" vs Node ${process.versions.node}`).toBe(true);
    expect(satisfiesMajor(engines, IMAGE_NODE_MAJOR), `engines "${engines}" vs the image's Node ${IMAGE_NODE_MAJOR}`).toBe(true);
  });

  it("when the runtime stage starts, then node runs dist/main.js directly as a non-root user", () => {
    const last = (keyword: string): string | undefined => runtime.filter((i) => i.keyword === keyword).at(-1)?.args;

    expect(last("CMD")).toBe('["node", "dist/main.js"]');
    expect(last("USER")).toBe("node");
    expect(last("ENTRYPOINT")).toBeUndefined();
  });

  it("when the runtime stage starts, then the database lives on the /data volume and port 8080 is exposed with a health check", () => {
    const args = (keyword: string): string =>
      runtime
        .filter((i) => i.keyword === keyword)
        .map((i) => i.args)
        .join(" ");

    expect(args("ENV")).toContain("TIMER_DB_PATH=/data/timer.db");
    expect(args("VOLUME")).toContain('"/data"');
    expect(args("RUN")).toContain("chown node:node /data");
    expect(args("EXPOSE")).toBe("8080");
    expect(args("HEALTHCHECK")).toMatch(/fetch\('http:\/\/127\.0\.0\.1:.*\/healthz'\)/);
  });

  it("when the build context is sent, then every file the Dockerfile copies exists and is not in .dockerignore", () => {
    const sources = [...contextSources(builder), ...contextSources(runtime)];

    expect(sources).toEqual(expect.arrayContaining(["package.json", "package-lock.json", "src", "drizzle"]));
    for (const source of sources) {
      expect(existsSync(join(repoRoot, source)), `${source} exists`).toBe(true);
      expect(ignored, `${source} is excluded by .dockerignore`).not.toContain(source);
    }
  });

  it("when the builder's `npm run build` runs on the copied files only, then dist/main.js is built", () => {
    const dir = mkdtempSync(join(tmpdir(), "timer-ops-docker-"));
    tempDirs.push(dir);
    for (const source of contextSources(builder)) cpSync(join(repoRoot, source), join(dir, source), { recursive: true });
    symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"), "dir");

    const result = runCommand("npm", ["run", "build"], dir);

    expect(result.code, result.output).toBe(0);
    expect(existsSync(join(dir, "dist", "main.js"))).toBe(true);
  });
});
