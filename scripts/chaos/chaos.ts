import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseChaosArgs } from "./options.js";
import { runChaos } from "./run.js";

/**
 * `npm run chaos -- [--seed N] [--duration 120s|30m] [--rate N] [--out DIR]`: a nemesis run; prints
 * the seed first and a JSON summary last, writes the full history next to it, and exits 1 on a
 * violation (or an instance not ready again after the faults).
 */
const options = parseChaosArgs(process.argv.slice(2));
const log = (line: string): void => void process.stderr.write(`${line}\n`);
log(`chaos seed ${options.seed} (replay: npm run chaos -- --seed ${options.seed} --duration ${options.durationMs / 1000}s)`);
const result = await runChaos({ ...options, log });
mkdirSync(options.outDir, { recursive: true });
writeFileSync(join(options.outDir, "history.json"), JSON.stringify(result.history));
const output = {
  ...result.summary,
  ok: result.summary.ok && result.notReady.length === 0,
  notReady: result.notReady,
  outDir: options.outDir,
};
writeFileSync(join(options.outDir, "summary.json"), JSON.stringify(output, null, 2));
process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
process.exit(output.ok ? 0 : 1);
