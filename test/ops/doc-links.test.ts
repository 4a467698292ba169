import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/** Every relative link of the README and the top-level docs pages names a file or folder that exists. */
const repoRoot = resolve(import.meta.dirname, "../..");
const PAGES = [
  "README.md",
  ...readdirSync(join(repoRoot, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** Link targets outside code blocks: `[text](target)`, without the fragment. */
function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith("#"))
    .map((target) => decodeURIComponent(target.split("#")[0]!));
}

describe("documentation links", () => {
  it("when the README is read, then it fits on a front door (at most 150 lines)", () => {
    const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
    expect(readme.trimEnd().split("\n").length).toBeLessThanOrEqual(150);
    expect(relativeLinks(readme).length).toBeGreaterThan(20);
  });

  it.each(PAGES)("when %s links to a file of the repository, then that file exists", (page) => {
    const missing = relativeLinks(readFileSync(join(repoRoot, page), "utf8")).filter(
      (target) => !existsSync(resolve(dirname(join(repoRoot, page)), target)),
    );
    expect(missing).toEqual([]);
  });
});
