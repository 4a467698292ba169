import { randomInt } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface ChaosArgs {
  readonly seed: number;
  readonly durationMs: number;
  readonly rate: number;
  readonly outDir: string;
}

/** `--seed N`, `--duration 90s|30m|120000`, `--rate N` (timers/s), `--out DIR`. */
export function parseChaosArgs(argv: readonly string[]): ChaosArgs {
  const value = (name: string): string | undefined => {
    const i = argv.indexOf(`--${name}`);
    return i === -1 ? undefined : argv[i + 1];
  };
  const seedText = value("seed");
  const seed = seedText === undefined ? randomInt(1, 2 ** 31) : Number(seedText);
  if (!Number.isInteger(seed) || seed < 0) throw new Error(`--seed: a non-negative integer, got ${seedText}`);
  const durationMs = parseDuration(value("duration") ?? "120s");
  const rate = Number(value("rate") ?? "5");
  if (!(rate > 0)) throw new Error(`--rate: timers per second above 0, got ${value("rate")}`);
  const outDir = value("out") ?? join(tmpdir(), `chaos-${seed}-${Date.now()}`);
  return { seed, durationMs, rate, outDir };
}

export function parseDuration(text: string): number {
  const match = /^(\d+)(ms|s|m)?$/.exec(text);
  if (match === null) throw new Error(`--duration: e.g. 120s, 30m or 90000, got ${text}`);
  const unit = match[2] ?? "ms";
  return Number(match[1]) * (unit === "m" ? 60_000 : unit === "s" ? 1_000 : 1);
}
