import { parseArgs } from "node:util";
import { runCrashLoop } from "./crash-loop-engine.js";

/**
 * The long crash loop: `npm run crash-loop -- --timers 1000000 --kills 20 --broker-restarts 5
 * [--seed N] [--rate N] [--store sqlite|postgres] [--instances N]`. With `--store postgres` the
 * instances share one new schema of TIMER_TEST_DATABASE_URL (default the machine's Postgres) and
 * each kill hits one of them at random. Prints the seed first (stderr) and the report as one JSON line (stdout);
 * exits 1 when a timer was lost or fired early.
 */
const { values } = parseArgs({
  options: {
    timers: { type: "string", default: "1000000" },
    kills: { type: "string", default: "20" },
    "broker-restarts": { type: "string", default: "5" },
    seed: { type: "string" },
    rate: { type: "string" },
    concurrency: { type: "string", default: "256" },
    store: { type: "string", default: "sqlite" },
    instances: { type: "string", default: "1" },
  },
});

function count(name: string, text: string | undefined): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) {
    process.stderr.write(`crash-loop: --${name} must be a non-negative integer, got "${text}"\n`);
    process.exit(2);
  }
  return value;
}

const timers = count("timers", values.timers);
const store = values.store;
if (store !== "sqlite" && store !== "postgres") {
  process.stderr.write(`crash-loop: --store must be sqlite or postgres, got "${store}"\n`);
  process.exit(2);
}
const instances = count("instances", values.instances);
if (instances < 1 || (store === "sqlite" && instances !== 1)) {
  process.stderr.write(
    `crash-loop: --instances must be 1 with sqlite (one instance per consumer) and at least 1 with postgres, got ${instances}\n`,
  );
  process.exit(2);
}
const report = await runCrashLoop({
  timers,
  kills: count("kills", values.kills),
  brokerRestarts: count("broker-restarts", values["broker-restarts"]),
  seed: values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : count("seed", values.seed),
  // By default the load spreads over about a minute, at most 5000 commands a second.
  rate: values.rate === undefined ? Math.min(5_000, Math.max(200, Math.ceil(timers / 60))) : count("rate", values.rate),
  concurrency: count("concurrency", values.concurrency),
  store,
  instances,
});
process.stdout.write(`${JSON.stringify(report)}\n`);
process.exit(report.lost === 0 && report.early === 0 ? 0 : 1);
