#!/usr/bin/env node
// Fails (exit 1) when the modules under src/ import each other in a circle, type-only imports
// included: every circle found is printed as a chain of files. Part of `npm run lint`.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import console from "node:console";
import process from "node:process";

const ROOT = resolve(process.argv[2] ?? "src");
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return path.endsWith(".ts") && !path.endsWith(".d.ts") ? [path] : [];
  });
}

const graph = new Map();
for (const file of files(ROOT)) {
  const targets = new Set();
  for (const match of readFileSync(file, "utf8").matchAll(IMPORT)) {
    const spec = match[1] ?? match[2];
    if (!spec.startsWith(".")) continue;
    const target = resolve(dirname(file), spec.replace(/\.js$/, ".ts"));
    targets.add(target);
  }
  graph.set(
    file,
    [...targets].filter((t) => t !== file),
  );
}

// Tarjan's strongly connected components: every component of more than one file is a circle.
let index = 0;
const indices = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
const circles = [];
function visit(node) {
  indices.set(node, index);
  low.set(node, index++);
  stack.push(node);
  onStack.add(node);
  for (const next of graph.get(node) ?? []) {
    if (!graph.has(next)) continue;
    if (!indices.has(next)) {
      visit(next);
      low.set(node, Math.min(low.get(node), low.get(next)));
    } else if (onStack.has(next)) low.set(node, Math.min(low.get(node), indices.get(next)));
  }
  if (low.get(node) !== indices.get(node)) return;
  const component = [];
  let member;
  do {
    member = stack.pop();
    onStack.delete(member);
    component.push(member);
  } while (member !== node);
  if (component.length > 1) circles.push(component);
}
for (const node of graph.keys()) if (!indices.has(node)) visit(node);

if (circles.length > 0) {
  for (const circle of circles) {
    console.error(
      `import circle: ${circle
        .map((f) => relative(process.cwd(), f))
        .sort()
        .join(", ")}`,
    );
  }
  console.error(
    `${circles.length} import circle(s) under ${relative(process.cwd(), ROOT) || "."}: break each (move the shared type to the file it belongs to).`,
  );
  process.exit(1);
}
