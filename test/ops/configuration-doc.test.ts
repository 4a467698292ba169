import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/** Every environment variable the service's code reads has its row in docs/configuration.md. */
const repoRoot = resolve(import.meta.dirname, "../..");

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** Only upper-case names (and npm's own `npm_*`): `env.example` in a message is not a variable. */
const NAME = String.raw`([A-Z][A-Z0-9_]*[A-Z0-9]|npm_[a-z_]+)`;

/**
 * The ways the code reads a variable: a member of an environment object (`env.X`, `env["X"]`,
 * `process.env.X`), a name handed to a reader with the environment (`text(env, "X", …)`), a name
 * held for a reader (`const variable = "X"`) and the name a ConfigError reports.
 */
const READS = [
  new RegExp(String.raw`(?<![\w.-])(?:process\.)?env\??\.${NAME}\b`, "g"),
  new RegExp(String.raw`(?<![\w.-])(?:process\.)?env\[\s*"${NAME}"\s*\]`, "g"),
  new RegExp(String.raw`\(\s*env\s*,\s*"${NAME}"`, "g"),
  new RegExp(String.raw`\bvariable\s*=\s*"${NAME}"`, "g"),
  new RegExp(String.raw`new ConfigError\(\s*"${NAME}"`, "g"),
];

/** The variables read anywhere under src/, with the files that read them. */
function variablesRead(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of sourceFiles(join(repoRoot, "src"))) {
    const code = readFileSync(file, "utf8");
    for (const pattern of READS) {
      for (const match of code.matchAll(pattern)) {
        const files = found.get(match[1]!) ?? [];
        found.set(match[1]!, [...files, file.slice(repoRoot.length + 1)]);
      }
    }
  }
  return found;
}

/** The names in the first cell of each table row of docs/configuration.md. */
function documentedVariables(): Set<string> {
  const page = readFileSync(join(repoRoot, "docs/configuration.md"), "utf8");
  const firstCells = [...page.matchAll(/^\|([^|\n]*)\|/gm)].map((m) => m[1]!);
  return new Set(firstCells.flatMap((cell) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)));
}

describe("docs/configuration.md", () => {
  it("when the code reads an environment variable, then the page has a row for it", () => {
    const read = variablesRead();
    const documented = documentedVariables();

    const missing = [...read]
      .filter(([name]) => !documented.has(name))
      .map(([name, files]) => `${name} (${[...new Set(files)].join(", ")})`);

    expect(missing, "variables read under src/ without a row in docs/configuration.md").toEqual([]);
  });

  it("when src/ is scanned, then it finds the variables of every reader (the scan itself works)", () => {
    const read = [...variablesRead().keys()];

    // One of each way of reading: a reader call, a held name, a member read, a store and a tracing variable.
    expect(read).toEqual(
      expect.arrayContaining([
        "TIMER_DB_PATH",
        "TIMER_BROKER_URL",
        "TIMER_STORE",
        "TIMER_DATABASE_URL",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "npm_lifecycle_event",
      ]),
    );
    expect(read).not.toContain("TIMER_COMMANDS");
  });
});
