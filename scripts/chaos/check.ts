import { readFileSync } from "node:fs";
import { checkHistory } from "./checker.js";
import type { ChaosHistory } from "./history.js";

/** `tsx scripts/chaos/check.ts history.json`: judges a saved run's history again; exits 1 on a violation. */
const path = process.argv[2];
if (path === undefined) throw new Error("usage: tsx scripts/chaos/check.ts <history.json>");
const summary = checkHistory(JSON.parse(readFileSync(path, "utf8")) as ChaosHistory);
process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
process.exit(summary.ok ? 0 : 1);
