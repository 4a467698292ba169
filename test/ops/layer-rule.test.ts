import { resolve } from "node:path";
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

const repoRoot = resolve(import.meta.dirname, "../..");

/** Lints `code` as if it were the file at `path` (nothing is written), and returns the rules it broke. */
async function brokenRules(path: string, code: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: repoRoot });
  const [result] = await eslint.lintText(code, { filePath: resolve(repoRoot, path) });
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message);
}

// The layer rule of the hexagon (ADR-0001), as eslint.config.js states it and `npm run lint` checks.
describe("layer rule", () => {
  it("when the domain imports the application or a library, then lint fails", async () => {
    expect(await brokenRules("src/domain/probe.ts", 'import type { Clock } from "../app/clock.js";\nexport type X = Clock;\n')).toContain(
      "no-restricted-imports",
    );
    expect(await brokenRules("src/domain/probe.ts", 'import { z } from "zod";\nexport const x = z;\n')).toContain("no-restricted-imports");
  });

  it("when the domain imports another domain file or a node built-in, then lint passes", async () => {
    expect(
      await brokenRules(
        "src/domain/probe.ts",
        'import type { Timer } from "./timer.js";\nimport { randomUUID } from "node:crypto";\nexport type X = Timer;\nexport const y = randomUUID;\n',
      ),
    ).toEqual([]);
  });

  it("when the application imports an adapter, the composition root or a library other than zod, then lint fails", async () => {
    const probes = [
      'import { MemoryTimerStore } from "../adapters/memory/memory-timer-store.js";\nexport const x = MemoryTimerStore;\n',
      'import { loadConfig } from "../config/config.js";\nexport const x = loadConfig;\n',
      'import { startTimerService } from "../composition/service.js";\nexport const x = startTimerService;\n',
      'import pino from "pino";\nexport const x = pino;\n',
    ];
    for (const probe of probes) expect(await brokenRules("src/app/probe.ts", probe), probe).toContain("no-restricted-imports");
  });

  it("when an adapter imports the composition root, then lint fails", async () => {
    const probe = 'import { startTimerService } from "../../composition/service.js";\nexport const x = startTimerService;\n';
    expect(await brokenRules("src/adapters/sqlite/probe.ts", probe)).toContain("no-restricted-imports");
  });

  it("when the application imports the domain, its ports and zod, then lint passes", async () => {
    expect(
      await brokenRules(
        "src/app/firing/probe.ts",
        'import type { Timer } from "../../domain/timer.js";\nimport type { Clock } from "../clock.js";\nimport { z } from "zod";\nexport type X = [Timer, Clock];\nexport const y = z;\n',
      ),
    ).toEqual([]);
  });
});
