import { Prng } from "./prng.js";

export const FAULT_KINDS = [
  "kill-instance",
  "stop-nats-node",
  "partition-instance-postgres",
  "partition-instance-nats",
  "freeze-postgres",
  "step-clock",
  "slow-storage",
  "failover-postgres",
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** One planned fault: when it starts (ms after the nemesis starts), whom it hits, how long it lasts. */
export interface PlannedFault {
  readonly atMs: number;
  readonly kind: FaultKind;
  /** Instance index (0..2) or NATS node index for `stop-nats-node`; -1 for `freeze-postgres` and `failover-postgres`. */
  readonly target: number;
  readonly durationMs: number;
  /** `step-clock`: the offset in ms (±30 s); `slow-storage`: the added latency per chunk in ms. */
  readonly amount: number;
}

export const INSTANCES = 3;
export const NATS_NODES = 3;
const GAP_MIN_MS = 5_000;
const GAP_MAX_MS = 15_000;
const CLOCK_STEP_MS = 30_000;

/**
 * The fault schedule of a run: a fault every 5–15 s, each kind equally likely, drawn from the seed
 * alone, so the same seed and duration give the same schedule. Faults never overlap: each one is
 * healed before the next starts (durations are shorter than the gap that follows).
 */
export function planFaults(seed: number, durationMs: number, kinds: readonly FaultKind[] = FAULT_KINDS): PlannedFault[] {
  const prng = new Prng(seed).fork("faults");
  const faults: PlannedFault[] = [];
  let atMs = prng.int(GAP_MIN_MS, GAP_MAX_MS);
  while (atMs < durationMs) {
    const gapMs = prng.int(GAP_MIN_MS, GAP_MAX_MS);
    const kind = prng.pick(kinds);
    const fault = draw(prng, kind, atMs, gapMs);
    faults.push(fault);
    atMs += gapMs;
  }
  return faults;
}

function draw(prng: Prng, kind: FaultKind, atMs: number, gapMs: number): PlannedFault {
  // Leave at least 2 s of the gap unfaulted before the next fault.
  const within = (min: number, max: number): number => Math.min(prng.int(min, max), gapMs - 2_000);
  switch (kind) {
    case "kill-instance":
      return { atMs, kind, target: prng.int(0, INSTANCES - 1), durationMs: within(500, 3_000), amount: 0 };
    case "stop-nats-node":
      return { atMs, kind, target: prng.int(0, NATS_NODES - 1), durationMs: within(3_000, 10_000), amount: 0 };
    case "partition-instance-postgres":
    case "partition-instance-nats":
      return { atMs, kind, target: prng.int(0, INSTANCES - 1), durationMs: within(3_000, 10_000), amount: 0 };
    case "freeze-postgres":
      return { atMs, kind, target: -1, durationMs: within(2_000, 6_000), amount: 0 };
    case "step-clock":
      return {
        atMs,
        kind,
        target: prng.int(0, INSTANCES - 1),
        durationMs: within(3_000, 12_000),
        amount: prng.pick([-1, 1]) * CLOCK_STEP_MS,
      };
    case "slow-storage":
      return { atMs, kind, target: prng.int(0, INSTANCES - 1), durationMs: within(3_000, 10_000), amount: prng.int(50, 300) };
    // The primary is dead this long before the standby is promoted; rebuilding a standby follows.
    case "failover-postgres":
      return { atMs, kind, target: -1, durationMs: within(1_000, 3_000), amount: 0 };
  }
}
