import { resolve } from "node:path";
import { type Scope } from "./scope.js";

// Context handed to every scenario

export const REPO_ROOT = resolve(import.meta.dirname, "../../..");

export interface BenchOptions {
  readonly quick: boolean;
  /** Pending rows of the big poll scenario when --size 10m. */
  readonly size: "1m" | "10m";
  /** Folder for --cpu-prof output of the service, or undefined when not profiling. */
  readonly profileDir: string | undefined;
  /**
   * --store: the service's store (default sqlite). With postgres each service gets a new schema of
   * TIMER_TEST_DATABASE_URL's database (default the machine's Postgres), dropped afterwards.
   */
  readonly store: StoreKind;
  /** --instances: service processes sharing the consumer (postgres only); undefined when not given. */
  readonly instances: number | undefined;
  /** Whether --store was given (the `instances` scenario then measures that one configuration). */
  readonly storeGiven: boolean;
}

export type StoreKind = "sqlite" | "postgres";

/**
 * A measured phase of one service process, on CLOCK_MONOTONIC in µs — the clock V8 stamps its
 * CPU-profile samples with — so that --profile summarizes only the samples of that phase.
 */
export interface ProfileWindow {
  /** The service label (its --cpu-prof folder). */
  readonly label: string;
  readonly name: string;
  readonly fromUs: number;
  readonly toUs: number;
}

/** CLOCK_MONOTONIC in µs (process.hrtime uses it, like V8's profiler). */
export function monoUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

export interface BenchContext extends BenchOptions {
  readonly scope: Scope;
  /** 1, or 0.1 with --quick: multiply counts by it. */
  readonly scale: number;
  /** Results of the scenarios that ran before (burst uses the measured ingest rate). */
  readonly earlier: Readonly<Record<string, unknown>>;
  /** Measured phases, for --profile (shared by all scenarios). */
  readonly profileWindows: ProfileWindow[];
  log(message: string): void;
}

export function scaled(ctx: BenchContext, count: number): number {
  return Math.max(1, Math.round(count * ctx.scale));
}
