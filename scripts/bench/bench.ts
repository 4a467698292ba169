/**
 * `npm run bench` — builds the service, then for each scenario starts its own nats-server and the
 * service as a separate process (`node dist/main.js`, default configuration), drives it only through
 * NATS from this process, and finally prints ONE JSON line with every figure and the targets
 * (pass/miss) on stdout. Progress goes to stderr. The JSON is also saved under bench-results/.
 *
 *   npm run bench                         all scenarios (about 3–4 minutes on 2 cores)
 *   npm run bench -- --quick              everything 10x smaller: a smoke run
 *   npm run bench -- --only burst,ingest  some scenarios (names below); ingest includes the backlog
 *                                         drain against v1 (commit f91ce85, built once into
 *                                         bench-results/.baseline-f91ce85/ by baseline.ts)
 *   npm run bench -- --only historyCost   a timer's history off / kept / kept and confirmed, and v4.0.0
 *                                         (commit fafcd82, built by baseline.ts), alternated backlog drains
 *   npm run bench -- --size 10m           also pollAt10M (10,000,000 pending rows; slow to generate)
 *   npm run bench -- --profile            run the service under --cpu-prof and print its hot spots
 *                                         (figures of a profiled run are not comparable)
 *   npm run bench -- --store postgres     the service on Postgres (TIMER_TEST_DATABASE_URL, default the
 *                                         machine's; a new schema per service, dropped afterwards)
 *   npm run bench -- --peers              also BullMQ on redis-server (scripts/bench/peers/) on the
 *                                         workloads of ingest, burst and lowLoadLag, with our figures
 *                                         of the same run / BullMQ's as ratios; CI does not run it.
 *                                         With --only: e.g. --only ingest,burst,lowLoadLag --peers
 *   npm run bench -- --only instances [--store postgres --instances 3]
 *                                         ingest, 100k burst and low-load lag for Postgres with 1, 2, 3
 *                                         instances and SQLite with one, or only the deployment given
 */
import { mkdirSync, writeFileSync, readdirSync, existsSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  REPO_ROOT,
  Scope,
  loadAverage,
  log,
  machineInfo,
  round,
  withTimeout,
  type BenchContext,
  type BenchOptions,
  type ProfileWindow,
  type StoreKind,
} from "./harness.js";
import { formatProfile, summarizeCpuProfile, type ProfileSummary } from "./cpu-profile.js";
import { rawCeiling } from "./scenarios/raw-ceiling.js";
import { ingest } from "./scenarios/ingest.js";
import { burst } from "./scenarios/burst.js";
import { lowLoadLag } from "./scenarios/low-load-lag.js";
import { recovery } from "./scenarios/recovery.js";
import { pollAtSize } from "./scenarios/poll-at-size.js";
import { queriesAt1M, retentionSweep } from "./scenarios/queries.js";
import { recurringLoad } from "./scenarios/recurring-load.js";
import { instances } from "./scenarios/instances.js";
import { deliveryOverhead } from "./scenarios/delivery-overhead.js";
import { traceOverhead } from "./scenarios/trace-overhead.js";
import { historyCost } from "./scenarios/history-cost.js";
import { catchUp } from "./scenarios/catch-up.js";
import { catchUpFlood } from "./scenarios/catch-up-flood.js";
import { manyTenants, noisyNeighbour, queryFlood } from "./scenarios/fairness.js";
import { peers } from "./peers/peers.js";
import { commandFlood, cpuPerItem } from "./scenarios/command-flood.js";

type Scenario = (ctx: BenchContext) => Promise<Record<string, unknown>>;

const SCENARIOS: { name: string; run: Scenario; timeoutMs: number; sizeFlag?: boolean; peersFlag?: boolean }[] = [
  { name: "rawCeiling", run: rawCeiling, timeoutMs: 10 * 60_000 },
  { name: "catchUp", run: catchUp, timeoutMs: 5 * 60_000 },
  { name: "catchUpFlood", run: catchUpFlood, timeoutMs: 20 * 60_000 },
  // Includes the backlog drain against v1 (commit f91ce85, built once into bench-results/).
  { name: "ingest", run: ingest, timeoutMs: 30 * 60_000 },
  { name: "burst", run: burst, timeoutMs: 15 * 60_000 },
  { name: "lowLoadLag", run: lowLoadLag, timeoutMs: 5 * 60_000 },
  { name: "noisyNeighbour", run: noisyNeighbour, timeoutMs: 20 * 60_000 },
  { name: "manyTenants", run: manyTenants, timeoutMs: 20 * 60_000 },
  { name: "queryFlood", run: queryFlood, timeoutMs: 20 * 60_000 },
  // Against main before ingest fairness (commit 0fd4785) and before fair firing (ccc0d74), built once into bench-results/.
  { name: "commandFlood", run: commandFlood, timeoutMs: 30 * 60_000 },
  { name: "cpuPerItem", run: cpuPerItem, timeoutMs: 20 * 60_000 },
  { name: "recovery", run: recovery, timeoutMs: 10 * 60_000 },
  { name: "pollAt1M", run: pollAtSize(1_000_000, "pollAt1M"), timeoutMs: 15 * 60_000 },
  { name: "pollAt10M", run: pollAtSize(10_000_000, "pollAt10M"), timeoutMs: 60 * 60_000, sizeFlag: true },
  { name: "queriesAt1M", run: queriesAt1M, timeoutMs: 20 * 60_000 },
  { name: "retentionSweep", run: retentionSweep, timeoutMs: 20 * 60_000 },
  { name: "recurringLoad", run: recurringLoad, timeoutMs: 15 * 60_000 },
  // Postgres with 1, 2, 3 instances and SQLite, or the one deployment given with --store/--instances.
  { name: "instances", run: instances, timeoutMs: 60 * 60_000 },
  // CPU per timer with and without completion tracking (delivery).
  { name: "deliveryOverhead", run: deliveryOverhead, timeoutMs: 20 * 60_000 },
  // The trace merge against main just before it, and this build, alternated rounds after a warm-up.
  { name: "traceOverhead", run: traceOverhead, timeoutMs: 30 * 60_000 },
  // History off, kept, kept and confirmed, and the v4.0.0 release (fafcd82), alternated backlog drains.
  { name: "historyCost", run: historyCost, timeoutMs: 30 * 60_000 },
  // BullMQ on redis-server, last: its ratios divide the figures of ingest, burst and lowLoadLag above.
  { name: "peers", run: peers, timeoutMs: 45 * 60_000, peersFlag: true },
];

interface Args extends BenchOptions {
  only: string[] | undefined;
  peers: boolean;
}

function parseArgs(argv: readonly string[]): Args {
  let quick = false;
  let size: "1m" | "10m" = "1m";
  let only: string[] | undefined;
  let profile = false;
  let peersFlag = false;
  let store: StoreKind = "sqlite";
  let storeGiven = false;
  let instanceCount: number | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = (): string => {
      const v = arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : argv[++i];
      if (v === undefined) usage(`${arg} needs a value`);
      return v;
    };
    if (arg === "--quick") quick = true;
    else if (arg === "--profile") profile = true;
    else if (arg === "--peers") peersFlag = true;
    else if (arg.startsWith("--only"))
      only = value()
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== "");
    else if (arg.startsWith("--size")) {
      const v = value().toLowerCase();
      if (v !== "1m" && v !== "10m") usage(`--size is 1m or 10m, not ${v}`);
      size = v;
    } else if (arg.startsWith("--store")) {
      const v = value().toLowerCase();
      if (v !== "sqlite" && v !== "postgres") usage(`--store is sqlite or postgres, not ${v}`);
      store = v;
      storeGiven = true;
    } else if (arg.startsWith("--instances")) {
      const v = Number(value());
      if (!Number.isInteger(v) || v < 1 || v > 16) usage("--instances is an integer from 1 to 16");
      instanceCount = v;
    } else if (arg === "--help" || arg === "-h") usage();
    else usage(`unknown argument ${arg}`);
  }
  for (const name of only ?? []) if (!SCENARIOS.some((s) => s.name === name)) usage(`unknown scenario ${name}`);
  if (only?.includes("pollAt10M")) size = "10m";
  if (only?.includes("peers")) peersFlag = true;
  if (instanceCount !== undefined && instanceCount > 1 && store !== "postgres")
    usage("--instances above 1 needs --store postgres (SQLite: one instance per consumer)");
  // Only the instances scenario runs several processes; the others run one on the chosen store.
  if (instanceCount !== undefined && instanceCount > 1 && (only === undefined || only.some((name) => name !== "instances"))) {
    usage("--instances above 1 applies to the instances scenario only: add --only instances");
  }
  const profileDir = profile ? resolve(REPO_ROOT, "bench-results", `profile-${stamp()}`) : undefined;
  return { quick, size, only, profileDir, store, storeGiven, instances: instanceCount, peers: peersFlag };
}

function usage(error?: string): never {
  if (error !== undefined) process.stderr.write(`bench: ${error}\n`);
  process.stderr.write(
    `usage: npm run bench -- [--quick] [--only ${SCENARIOS.map((s) => s.name).join(",")}] [--size 1m|10m] [--profile] [--store sqlite|postgres] [--instances N] [--peers]\n`,
  );
  process.exit(error === undefined ? 0 : 2);
}

function stamp(): string {
  return new Date().toISOString().replace(/[:.]/g, "-");
}

// ---------------------------------------------------------------------------------------------
// Targets, checked against the figures

interface Target {
  name: string;
  path: string;
  op: "<=" | ">=";
  target: number;
  unit: string;
  /** Time targets for N items scale with N in --quick runs. */
  scalesWithCount?: boolean;
}

const TARGETS: Target[] = [
  { name: "low-load lag p99", path: "lowLoadLag.p99Ms", op: "<=", target: 20, unit: "ms" },
  {
    name: "noisy neighbour: B's lateness max (contract ≤ 1000)",
    path: "noisyNeighbour.quietLatenessMs.max",
    op: "<=",
    target: 1000,
    unit: "ms",
  },
  { name: "noisy neighbour: B's lateness p99", path: "noisyNeighbour.quietLatenessMs.p99", op: "<=", target: 50, unit: "ms" },
  { name: "noisy neighbour: A's drain rate vs A alone", path: "noisyNeighbour.aloneToNoisyRate", op: ">=", target: 0.9, unit: "×" },
  { name: "10,000 tenants × 10: drain rate vs one tenant", path: "manyTenants.rateToOneTenant", op: ">=", target: 0.8, unit: "×" },
  {
    name: "query flood: B's lateness p99 under A's list queries",
    path: "queryFlood.floodedLatenessMs.p99",
    op: "<=",
    target: 100,
    unit: "ms",
  },
  { name: "command flood: B's command to event, max", path: "commandFlood.after.quietLatencyMs.max", op: "<=", target: 2000, unit: "ms" },
  {
    name: "command flood: C's (in A's partition) command to event, max",
    path: "commandFlood.after.sharingLatencyMs.max",
    op: "<=",
    target: 2000,
    unit: "ms",
  },
  { name: "CPU per command vs before fair firing", path: "cpuPerItem.commandRatio", op: "<=", target: 1.1, unit: "×" },
  { name: "CPU per event vs before fair firing", path: "cpuPerItem.eventRatio", op: "<=", target: 1.1, unit: "×" },
  {
    name: "CPU per event vs before the write path was narrowed",
    path: "cpuPerItem.eventRatioToBeforeWriteLess",
    op: "<=",
    target: 1,
    unit: "×",
  },
  // Medians of alternated rounds after a warm-up: the trace merge against its first parent (trace context alone), same run.
  {
    name: "trace context, headers only: CPU/cmd vs before",
    path: "traceOverhead.traceHeadersVsBefore.ingest",
    op: "<=",
    target: 1.05,
    unit: "×",
  },
  {
    name: "trace context, headers only: CPU/event vs before",
    path: "traceOverhead.traceHeadersVsBefore.fire",
    op: "<=",
    target: 1.05,
    unit: "×",
  },
  {
    name: "trace context, exporting: CPU/cmd vs before",
    path: "traceOverhead.traceExportingVsBefore.ingest",
    op: "<=",
    target: 1.3,
    unit: "×",
  },
  {
    name: "trace context, exporting: CPU/event vs before",
    path: "traceOverhead.traceExportingVsBefore.fire",
    op: "<=",
    target: 1.3,
    unit: "×",
  },
  // Medians of alternated backlog drains, same run: a timer's history kept against not, and not against v4.0.0.
  { name: "history kept: CPU/cmd vs history off", path: "historyCost.keptToOff", op: "<=", target: 1.1, unit: "×" },
  { name: "history off: CPU/cmd vs v4.0.0", path: "historyCost.offToV4", op: "<=", target: 1.05, unit: "×" },
  { name: "catch-up, per-minute cron from year 0: max", path: "catchUp.cronEveryMinuteFromYear0.maxMs", op: "<=", target: 100, unit: "ms" },
  {
    name: "catch-up, monthly cron after 100 years: max",
    path: "catchUp.cronMonthlyBerlinAfter100Years.maxMs",
    op: "<=",
    target: 100,
    unit: "ms",
  },
  {
    name: "100 costly catch-ups: other tenant late, max",
    path: "catchUpFlood.hundred.quietLatenessMs.max",
    op: "<=",
    target: 1000,
    unit: "ms",
  },
  { name: "100 costly catch-ups: /healthz, max", path: "catchUpFlood.hundred.healthzMs.max", op: "<=", target: 200, unit: "ms" },
  {
    name: "1,000 costly catch-ups: other tenant late, max",
    path: "catchUpFlood.thousand.quietLatenessMs.max",
    op: "<=",
    target: 1000,
    unit: "ms",
  },
  { name: "1,000 costly catch-ups: /healthz, max", path: "catchUpFlood.thousand.healthzMs.max", op: "<=", target: 200, unit: "ms" },
  { name: "100k burst, last event after due", path: "burst.seconds", op: "<=", target: 5, unit: "s", scalesWithCount: true },
  { name: "ingest, empty store", path: "ingest.empty.commandsPerSec", op: ">=", target: 30_000, unit: "/s" },
  { name: "ingest, 1M pending", path: "ingest.pending1M.commandsPerSec", op: ">=", target: 15_000, unit: "/s" },
  // Service CPU per command of the backlog drain, current / v1 (f91ce85) and / main before the
  // write path was narrowed (70fd28e), same run; the drain against the raw consume of that phase.
  { name: "backlog drain CPU/cmd, current / v1", path: "ingest.backlogVsV1.ratio", op: "<=", target: 1.0, unit: "x" },
  { name: "backlog drain CPU/cmd, current / before", path: "ingest.backlogVsV1.currentToBefore", op: "<=", target: 0.7, unit: "x" },
  { name: "backlog drain rate / raw consume", path: "ingest.backlogVsV1.currentDrainToRawConsume", op: ">=", target: 0.4, unit: "x" },
  { name: "ingest, 1M pending / empty store", path: "ingest.pending1MToEmpty", op: ">=", target: 0.8, unit: "x" },
  { name: "100k overdue drained (from process start)", path: "recovery.fromStartS", op: "<=", target: 5, unit: "s", scalesWithCount: true },
  { name: "1M pending: poll p99", path: "pollAt1M.pollP99Ms", op: "<=", target: 20, unit: "ms" },
  { name: "1M pending: RSS", path: "pollAt1M.rssMB", op: "<=", target: 300, unit: "MB" },
  { name: "10M pending: poll p99", path: "pollAt10M.pollP99Ms", op: "<=", target: 20, unit: "ms" },
  { name: "10M pending: RSS", path: "pollAt10M.rssMB", op: "<=", target: 300, unit: "MB" },
  { name: "100k recurring every 10 s: lag p99", path: "recurringLoad.p99Ms", op: "<=", target: 50, unit: "ms" },
  // Ours / BullMQ's in the same run, against Redis with appendfsync always (fsync per write, like ours).
  { name: "100k burst, ours / BullMQ's time", path: "peers.ratios.always.burstSeconds", op: "<=", target: 0.5, unit: "x" },
  { name: "low-load lag p99, ours / BullMQ's (hz 100)", path: "peers.ratios.always.lagP99", op: "<=", target: 0.5, unit: "x" },
  { name: "ingest, ours / BullMQ's add rate", path: "peers.ratios.always.ingestToAdd", op: ">=", target: 1.5, unit: "x" },
  // The same against Redis fsyncing once a second (its AOF default): BullMQ's faster configuration.
  { name: "ingest, ours / BullMQ's add rate (everysec)", path: "peers.ratios.everysec.ingestToAdd", op: ">=", target: 1.5, unit: "x" },
];

function lookup(results: Record<string, unknown>, path: string): unknown {
  return path
    .split(".")
    .reduce<unknown>(
      (value, key) => (value !== null && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined),
      results,
    );
}

function checkTargets(results: Record<string, unknown>, ran: Set<string>, quick: boolean, profiled: boolean) {
  return TARGETS.filter((t) => ran.has(t.path.split(".")[0]!)).map((t) => {
    const value = lookup(results, t.path);
    const target = quick && t.scalesWithCount ? t.target / 10 : t.target;
    if (typeof value !== "number" || Number.isNaN(value))
      return { name: t.name, target: `${t.op} ${target} ${t.unit}`, value: null, unit: t.unit, verdict: "no figure" };
    const pass = t.op === "<=" ? value <= target : value >= target;
    const invalid = t.path.startsWith("burst.") && lookup(results, "burst.valid") === false;
    return {
      name: t.name,
      target: `${t.op} ${target} ${t.unit}`,
      value,
      unit: t.unit,
      verdict: pass ? "pass" : "miss",
      /** value / target: >1 is worse for "<=", <1 is worse for ">=". */
      ratio: round(value / target, 2),
      ...(quick ? { note: "quick run (10x smaller): indicative only" } : {}),
      ...(profiled ? { note: "profiled run: not comparable" } : {}),
      ...(invalid ? { note: "ingest not finished before the due instant: invalid" } : {}),
    };
  });
}

/** Figures as ratios of the raw JetStream ceiling. */
function ratios(results: Record<string, any>): Record<string, number> | undefined {
  const raw = results.rawCeiling;
  if (raw === undefined) return undefined;
  const out: Record<string, number> = {};
  const put = (name: string, value: unknown, base: unknown): void => {
    if (typeof value === "number" && typeof base === "number" && base > 0) out[name] = round(value / base, 2);
  };
  put("ingestEmptyToPipeline", results.ingest?.empty?.commandsPerSec, raw.pipelinePerSec);
  put("ingestPending1MToPipeline", results.ingest?.pending1M?.commandsPerSec, raw.pipelinePerSec);
  put("ingestBacklogToConsume", results.ingest?.backlog?.commandsPerSec, raw.consumePerSec);
  put("ingestBacklogVsV1CurrentToConsume", results.ingest?.backlogVsV1?.currentCommandsPerSec, raw.consumePerSec);
  put("ingestBacklogVsV1V1ToConsume", results.ingest?.backlogVsV1?.v1CommandsPerSec, raw.consumePerSec);
  put("burstEventsToPublish", results.burst?.eventsPerSec, raw.publishPerSec);
  put("recoveryEventsToPublish", results.recovery?.eventsPerSec, raw.publishPerSec);
  return out;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  if (!existsSync(resolve(REPO_ROOT, "dist/main.js"))) {
    log("dist/main.js is missing: run `npm run build` (npm run bench does it)");
    return 2;
  }
  const selected = SCENARIOS.filter((s) =>
    s.peersFlag === true ? args.peers : args.only === undefined ? s.sizeFlag !== true || args.size === "10m" : args.only.includes(s.name),
  );
  const startedAt = new Date();
  const machine = { ...machineInfo(), loadAverageBefore: loadAverage() };
  log(
    `timer-service bench: ${selected.map((s) => s.name).join(", ")}${args.quick ? " (quick)" : ""}; load average ${machine.loadAverageBefore.join(" ")}`,
  );

  const results: Record<string, unknown> = {};
  const profileWindows: ProfileWindow[] = [];
  const errors: Record<string, string> = {};
  const loads: Record<string, number[]> = {};
  for (const scenario of selected) {
    const scope = new Scope(scenario.name);
    const ctx: BenchContext = {
      ...args,
      scope,
      scale: args.quick ? 0.1 : 1,
      earlier: results,
      profileWindows,
      log: (message) => log(`${scenario.name}: ${message}`),
    };
    log(`── ${scenario.name} ──`);
    const t0 = performance.now();
    try {
      const result = await withTimeout(scenario.run(ctx), scenario.timeoutMs, scenario.name);
      results[scenario.name] = result;
      // A phase that failed without failing its scenario (e.g. ingest.backlogVsV1) reports {error}.
      for (const [phase, value] of Object.entries(result)) {
        const error = value !== null && typeof value === "object" ? (value as { error?: unknown }).error : undefined;
        if (typeof error === "string") {
          errors[`${scenario.name}.${phase}`] = error;
          log(`${scenario.name}.${phase} FAILED: ${error}`);
        }
      }
    } catch (error) {
      errors[scenario.name] = error instanceof Error ? error.message : String(error);
      log(`${scenario.name} FAILED: ${errors[scenario.name]}`);
    } finally {
      await scope.close();
    }
    loads[scenario.name] = loadAverage();
    log(`${scenario.name} took ${((performance.now() - t0) / 1000).toFixed(0)} s; load average ${loads[scenario.name]!.join(" ")}`);
  }

  const ran = new Set(Object.keys(results));
  const targets = checkTargets(results, ran, args.quick, args.profileDir !== undefined);
  // Hot spots of each measured phase (the samples of that phase only; start-up and set-up left out).
  let profiles: Record<string, ProfileSummary> | undefined;
  if (args.profileDir !== undefined && existsSync(args.profileDir)) {
    profiles = {};
    for (const window of profileWindows) {
      const dir = join(args.profileDir, window.label);
      if (!existsSync(dir)) continue;
      const files = readdirSync(dir)
        .filter((f) => f.endsWith(".cpuprofile"))
        .sort();
      for (const file of files) {
        const summary = summarizeCpuProfile(join(dir, file), 15, window);
        if (summary === undefined) continue;
        // One profile per thread (CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile): each keeps its own summary.
        const thread = files.length === 1 ? undefined : /\.(\d+)\.\d+\.cpuprofile$/.exec(file)?.[1];
        const name = thread === undefined ? window.name : `${window.name} (thread ${thread})`;
        profiles[name] = summary;
        process.stderr.write(`\n${formatProfile(summary, name)}\n`);
      }
    }
  }

  const output = {
    bench: "timer-service",
    startedAt: startedAt.toISOString(),
    durationS: Math.round((Date.now() - startedAt.getTime()) / 1000),
    quick: args.quick,
    size: args.size,
    profiled: args.profileDir !== undefined,
    machine: { ...machine, loadAverageAfter: loadAverage(), loadAverageAfterScenario: loads },
    ...results,
    ratiosToRawCeiling: ratios(results),
    targets,
    ...(Object.keys(errors).length > 0 ? { errors } : {}),
    ...(profiles === undefined ? {} : { profiles, profileDir: args.profileDir }),
  };

  process.stderr.write("\ntargets:\n");
  for (const t of targets) {
    process.stderr.write(
      `  ${t.verdict.padEnd(9)} ${t.name.padEnd(42)} ${String(t.value ?? "-").padStart(9)} ${t.unit ?? ""}  (target ${t.target})\n`,
    );
  }
  for (const [name, message] of Object.entries(errors)) process.stderr.write(`  FAILED    ${name}: ${message}\n`);

  const line = JSON.stringify(output);
  try {
    const dir = resolve(REPO_ROOT, "bench-results");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `bench-${stamp()}.json`);
    writeFileSync(file, `${line}\n`);
    log(`saved ${file}`);
  } catch (error) {
    log(`could not save the result: ${String(error)}`);
  }
  process.stdout.write(`${line}\n`);
  return Object.keys(errors).length > 0 ? 1 : 0;
}

let exiting = false;
async function bail(reason: string, code: number): Promise<void> {
  if (exiting) return;
  exiting = true;
  log(`${reason}: cleaning up`);
  await Scope.closeAll();
  process.exit(code);
}
process.on("SIGINT", () => void bail("SIGINT", 130));
process.on("SIGTERM", () => void bail("SIGTERM", 143));
process.on("uncaughtException", (error) => void bail(`uncaught exception: ${error.stack ?? String(error)}`, 1));
process.on("unhandledRejection", (reason) => log(`unhandled rejection: ${String(reason)}`));

main().then(
  async (code) => {
    await Scope.closeAll();
    process.exit(code);
  },
  (error: unknown) => void bail(`bench failed: ${error instanceof Error ? error.stack : String(error)}`, 1),
);
