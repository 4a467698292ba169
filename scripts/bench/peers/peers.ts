/**
 * peers (`npm run bench -- --peers`): BullMQ on Debian's redis-server, on the workloads of our
 * ingest, burst and lowLoadLag scenarios, with Redis's AOF fsynced on every write (always: like
 * our SQLite synchronous=FULL) and once a second (everysec: Redis's AOF default). Our figures come
 * from the same run (the scenarios before this one) and are divided by BullMQ's:
 *  - burstSeconds: our 100k-burst time / BullMQ's (below 1: we are faster);
 *  - lagP50, lagP99: our low-load lag / BullMQ's (below 1: we are more punctual);
 *  - ingestToAdd, ingestToAddBulk: our stored commands per second / BullMQ's add (addBulk) jobs
 *    per second (above 1: we store faster).
 */
import { createRequire } from "node:module";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { round, type BenchContext } from "../harness.js";
import { bullmqBurst, bullmqIngest, bullmqLowLoadLag, type PeerSettings } from "./bullmq-workloads.js";
import { REDIS_CONFIG, redisServerVersion, type AppendFsync } from "./redis-server.js";

const CONCURRENCY = 500;
const MODES: readonly AppendFsync[] = ["always", "everysec"];

export async function peers(ctx: BenchContext): Promise<Record<string, unknown>> {
  const bullmq: Record<string, unknown> = { version: packageVersion("bullmq"), workerConcurrency: CONCURRENCY };
  const ratios: Record<string, Record<string, number | undefined>> = {};
  const ours = ourFigures(ctx.earlier);
  for (const appendfsync of MODES) {
    const settings: PeerSettings = { appendfsync, concurrency: CONCURRENCY };
    ctx.log(`BullMQ, appendfsync ${appendfsync}`);
    const ingest = await bullmqIngest(ctx, settings);
    const addBulkPerSec = (ingest.addBulk as { jobsPerSec?: number }).jobsPerSec;
    const burst = await bullmqBurst(ctx, settings, addBulkPerSec);
    const lowLoadLag = await bullmqLowLoadLag(ctx, settings);
    bullmq[appendfsync] = { ingest, burst, lowLoadLag };
    ratios[appendfsync] = {
      burstSeconds: ratio(ours.burstSeconds, burst.seconds),
      lagP50: ratio(ours.lagP50Ms, lowLoadLag.p50Ms),
      lagP99: ratio(ours.lagP99Ms, lowLoadLag.p99Ms),
      ingestToAdd: ratio(ours.ingestPerSec, (ingest.add as { jobsPerSec?: number }).jobsPerSec),
      ingestToAddBulk: ratio(ours.ingestPerSec, addBulkPerSec),
    };
  }
  const missing = Object.entries(ours)
    .filter(([, value]) => value === undefined)
    .map(([name]) => name);
  if (missing.length > 0) ctx.log(`no ratio for ${missing.join(", ")}: run burst, lowLoadLag and ingest in the same run`);
  return {
    bullmq,
    redis: { version: redisServerVersion(), config: REDIS_CONFIG, appendfsync: MODES },
    ours,
    /** Ours / BullMQ's, per appendfsync mode; see the file comment for the direction of each. */
    ratios,
  };
}

function ourFigures(earlier: Readonly<Record<string, unknown>>): Record<string, number | undefined> {
  const get = (path: string): number | undefined => {
    const value = path
      .split(".")
      .reduce<unknown>((v, key) => (v !== null && typeof v === "object" ? (v as Record<string, unknown>)[key] : undefined), earlier);
    return typeof value === "number" ? value : undefined;
  };
  const burstValid = get("burst.seconds") !== undefined && (earlier.burst as { valid?: boolean }).valid !== false;
  return {
    burstSeconds: burstValid ? get("burst.seconds") : undefined,
    lagP50Ms: get("lowLoadLag.p50Ms"),
    lagP99Ms: get("lowLoadLag.p99Ms"),
    ingestPerSec: get("ingest.empty.commandsPerSec"),
  };
}

function ratio(ours: number | undefined, theirs: unknown): number | undefined {
  return ours === undefined || typeof theirs !== "number" || theirs <= 0 ? undefined : round(ours / theirs, 2);
}

function packageVersion(name: string): string | undefined {
  try {
    let dir = dirname(createRequire(import.meta.url).resolve(name));
    while (!existsSync(join(dir, "package.json")) || JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).name !== name) {
      const parent = dirname(dir);
      if (parent === dir) return undefined;
      dir = parent;
    }
    return JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).version;
  } catch {
    return undefined;
  }
}
