import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * Every relative link of the README and the pages under docs/ names a file or folder that
 * exists, and every `#fragment` into a Markdown page names one of its headings (GitHub's anchors)
 * or an explicit `<a id="…">`.
 */
const repoRoot = resolve(import.meta.dirname, "../..");
const PAGES = [
  "README.md",
  ...readdirSync(join(repoRoot, "docs"), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`)
    .sort(),
];

function withoutCode(markdown: string): string {
  return markdown.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
}

/** Link targets outside code blocks: `[text](target)`, as written (fragment included). */
function relativeLinks(markdown: string): string[] {
  return [...withoutCode(markdown).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2, … */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const prose = markdown.replace(/```[\s\S]*?```/g, "");
  for (const [, text] of prose.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = text!
      .replace(/<[^>]+>/g, "")
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  for (const [, id] of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id!);
  return anchors;
}

/** The links of `page` whose file or fragment does not exist. */
function brokenLinks(page: string): string[] {
  const path = join(repoRoot, page);
  const broken: string[] = [];
  for (const target of relativeLinks(readFileSync(path, "utf8"))) {
    const [file, fragment] = target.split("#") as [string, string | undefined];
    const targetPath = file === "" ? path : resolve(dirname(path), decodeURIComponent(file));
    if (!existsSync(targetPath)) {
      broken.push(target);
      continue;
    }
    if (fragment === undefined || !targetPath.endsWith(".md") || statSync(targetPath).isDirectory()) continue;
    if (!anchorsOf(readFileSync(targetPath, "utf8")).has(decodeURIComponent(fragment))) broken.push(target);
  }
  return broken;
}

describe("documentation links", () => {
  it("when the README is read, then it fits on a front door (at most 150 lines)", () => {
    const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
    expect(readme.trimEnd().split("\n").length).toBeLessThanOrEqual(150);
    expect(relativeLinks(readme).length).toBeGreaterThan(20);
  });

  it.each(PAGES)("when %s links to a file or a heading of the repository, then it exists", (page) => {
    expect(brokenLinks(page)).toEqual([]);
  });

  it("when a fragment names no heading, then the link counts as broken", () => {
    const anchors = anchorsOf("# Top\n\n## What `FULL` costs\n\n### Clock jumps (`test/fault/clock-jump.test.ts`)\n\n## Top\n");
    expect([...anchors]).toEqual(["top", "what-full-costs", "clock-jumps-testfaultclock-jumptestts", "top-1"]);
  });
});
