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

/** Instructions per stage (continuation lines joined, comments dropped). */
function stages(dockerfile: string): Instruction[][] {
  const joined = dockerfile
    .split("\n")
    .filter((line) => !/^\s*#/.test(line))
    .join("\n")
    .replace(/\\\n/g, " ");
  const result: Instruction[][] = [];
  for (const line of joined.split("\n")) {
    const match = /^\s*([A-Z]+)\s+(.*)$/.exec(line);
    if (match === null) continue;
    const instruction = { keyword: match[1]!, args: match[2]!.trim() };
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

const dockerfile = readFileSync(join(repoRoot, "Dockerfile"), "utf8");
const [builder, runtime] = stages(dockerfile) as [Instruction[], Instruction[]];
const ignored = readFileSync(join(repoRoot, ".dockerignore"), "utf8")
  .split("\n")
  .map((l) => l.trim())
  .filter((l) => l !== "" && !l.startsWith("#") && !l.startsWith("!"));

describe("Dockerfile", () => {
  const tempDirs: string[] = [];
  afterAll(() => tempDirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it("when read, then it has a builder and a runtime stage on node:22-bookworm-slim", () => {
    expect(builder[0]!.args).toBe("node:22-bookworm-slim AS builder");
    expect(runtime[0]!.args).toBe("node:22-bookworm-slim AS runtime");
  });

  it("when the runtime stage starts, then node runs dist/main.js directly as a non-root user", () => {
    const last = (keyword: string): string | undefined => runtime.filter((i) => i.keyword === keyword).at(-1)?.args;

    expect(last("CMD")).toBe('["node", "dist/main.js"]');
    expect(last("USER")).toBe("node");
    expect(last("ENTRYPOINT")).toBeUndefined();
  });

  it("when the runtime stage starts, then the database lives on the /data volume and port 8080 is exposed with a health check", () => {
    const args = (keyword: string): string => runtime.filter((i) => i.keyword === keyword).map((i) => i.args).join(" ");

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
