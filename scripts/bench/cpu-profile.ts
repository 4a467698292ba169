/**
 * Summarizes a V8 .cpuprofile (written by `node --cpu-prof`): self time per function, inclusive
 * time of the service's own functions, and self time per package. Idle time is left out of the
 * percentages, so they say where the busy thread spends its time.
 *
 * Standalone: tsx scripts/bench/cpu-profile.ts <file.cpuprofile> [top]
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  file: string;
  wallMs: number;
  busyMs: number;
  idleMs: number;
  gcMs: number;
  topSelf: { fn: string; at: string; selfMs: number; pct: number }[];
  topInclusiveService: { fn: string; at: string; totalMs: number; pct: number }[];
  byPackage: { pkg: string; selfMs: number; pct: number }[];
}

function where(url: string, line: number): string {
  if (url === "") return "";
  const short = url
    .replace(/^file:\/\//, "")
    .replace(/^.*\/node_modules\//, "")
    .replace(/^.*\/dist\//, "dist/");
  return `${short}:${line + 1}`;
}

function packageOf(frame: ProfileNode["callFrame"]): string {
  const { url, functionName } = frame;
  if (url === "") return functionName.startsWith("(") ? functionName : "(native/v8)";
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm !== null) return nm[1]!;
  if (url.includes("/dist/")) return `service ${/\/dist\/(.*?)\/?[^/]*$/.exec(url)?.[1] || "."}`;
  if (url.startsWith("node:")) return `node:${url.slice(5).split("/")[1] ?? url.slice(5)}`;
  return url;
}

/**
 * `window` (CLOCK_MONOTONIC µs, the clock of the sample stamps) keeps only the samples of one
 * measured phase; undefined when the profile has no sample in it.
 */
export function summarizeCpuProfile(file: string, top = 20, window?: { fromUs: number; toUs: number }): ProfileSummary | undefined {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const selfUs = new Map<number, number>();
  let stamp = profile.startTime;
  let first: number | undefined;
  let last = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    stamp += delta;
    if (window !== undefined && (stamp < window.fromUs || stamp > window.toUs)) return;
    first ??= stamp - delta;
    last = stamp;
    selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
  });
  if (first === undefined) return undefined;

  const key = (n: ProfileNode): string =>
    `${n.callFrame.functionName || "(anonymous)"}\u0000${where(n.callFrame.url, n.callFrame.lineNumber)}`;
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const pkgs = new Map<string, number>();
  let idle = 0;
  let gc = 0;
  let total = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    total += us;
    const name = node.callFrame.functionName;
    if (name === "(idle)") {
      idle += us;
      continue;
    }
    if (name === "(garbage collector)") gc += us;
    self.set(key(node), (self.get(key(node)) ?? 0) + us);
    pkgs.set(packageOf(node.callFrame), (pkgs.get(packageOf(node.callFrame)) ?? 0) + us);
    // inclusive time of the service's own functions (dist/), each function once per stack
    const counted = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const frame = byId.get(cur)!;
      if (!frame.callFrame.url.includes("/dist/")) continue;
      const k = key(frame);
      if (counted.has(k)) continue;
      counted.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + us);
    }
  }
  const busy = total - idle;
  const pct = (us: number): number => Math.round((us / Math.max(1, busy)) * 1000) / 10;
  const ms = (us: number): number => Math.round(us / 100) / 10;
  const split = (k: string): { fn: string; at: string } => {
    const [fn, at] = k.split("\u0000");
    return { fn: fn!, at: at ?? "" };
  };
  return {
    file,
    wallMs: ms(last - first),
    busyMs: ms(busy),
    idleMs: ms(idle),
    gcMs: ms(gc),
    topSelf: [...self]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => ({ ...split(k), selfMs: ms(us), pct: pct(us) })),
    topInclusiveService: [...inclusive]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => ({ ...split(k), totalMs: ms(us), pct: pct(us) })),
    byPackage: [...pkgs]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 12)
      .map(([pkg, us]) => ({ pkg, selfMs: ms(us), pct: pct(us) })),
  };
}

export function formatProfile(summary: ProfileSummary, label: string): string {
  const lines = [
    `${label}: ${summary.file}`,
    `  wall ${summary.wallMs} ms, busy ${summary.busyMs} ms, idle ${summary.idleMs} ms, GC ${summary.gcMs} ms`,
    "  self time (busy %):",
    ...summary.topSelf.map((f) => `    ${f.pct.toFixed(1).padStart(5)}%  ${f.selfMs.toFixed(0).padStart(7)} ms  ${f.fn}  ${f.at}`),
    "  inclusive, service code:",
    ...summary.topInclusiveService
      .slice(0, 12)
      .map((f) => `    ${f.pct.toFixed(1).padStart(5)}%  ${f.totalMs.toFixed(0).padStart(7)} ms  ${f.fn}  ${f.at}`),
    "  self time by package:",
    ...summary.byPackage.map((p) => `    ${p.pct.toFixed(1).padStart(5)}%  ${p.selfMs.toFixed(0).padStart(7)} ms  ${p.pkg}`),
  ];
  return lines.join("\n");
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, ""))) {
  const [file, top] = process.argv.slice(2);
  if (file === undefined) {
    process.stderr.write("usage: tsx scripts/bench/cpu-profile.ts <file.cpuprofile> [top]\n");
    process.exit(2);
  }
  const summary = summarizeCpuProfile(file, Number(top ?? 25));
  process.stdout.write(summary === undefined ? "no samples\n" : `${formatProfile(summary, "profile")}\n`);
}
