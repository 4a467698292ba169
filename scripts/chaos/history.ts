import type { FaultKind } from "./fault-schedule.js";

/** Everything a run observed; the checker judges this alone. Times are the machine's real clock (ms). */
export interface ChaosHistory {
  readonly seed: number;
  readonly tenantId: string;
  /** The nemesis ran from `startedAtMs`; all faults were healed at `healedAtMs`; reading stopped at `endedAtMs`. */
  readonly startedAtMs: number;
  readonly healedAtMs: number;
  readonly endedAtMs: number;
  readonly timers: readonly TimerHistory[];
  readonly events: readonly ObservedEvent[];
  readonly faults: readonly InjectedFault[];
  /** The stream lost messages it had stored (its last sequence went below what was read). */
  readonly streamLostTail: number;
}

export type TimerPlan = "once" | "cancel" | "reschedule" | "recurring";

export interface TimerHistory {
  readonly serviceCallId: string;
  readonly plan: TimerPlan;
  readonly commands: readonly CommandRecord[];
  /** For a recurring timer: its period. */
  readonly everyMs?: number;
  /**
   * After a cancel or reschedule was accepted by the stream: the first time a direct read of the
   * database showed its outcome (so the command had committed by then), and what it showed.
   */
  readonly readBack?: ReadBack;
}

export interface CommandRecord {
  readonly kind: "schedule" | "cancel";
  readonly timestampMs: number;
  /** When the commands stream acknowledged it (the command is accepted); undefined: never acknowledged. */
  readonly acceptedAtMs: number | undefined;
  readonly dueAtMs?: number;
}

export interface ReadBack {
  readonly observedAtMs: number;
  readonly state: string;
  readonly generation: number;
  readonly dueAtMs: number | null;
}

export interface ObservedEvent {
  readonly serviceCallId: string;
  readonly dueAtMs: number;
  /** The firing instance's clock when it published. */
  readonly reachedAtMs: number;
  /** The broker's timestamp of the stored message (the machine's clock). */
  readonly storedAtMs: number;
  /** When the run's consumer had read it. */
  readonly receivedAtMs: number;
  readonly msgId: string | undefined;
  readonly envelopeId: string;
  readonly generation: number;
  readonly occurrence: number | undefined;
  readonly missedOccurrences: number | undefined;
}

export interface InjectedFault {
  readonly kind: FaultKind;
  readonly target: number;
  readonly amount: number;
  readonly startedAtMs: number;
  readonly healedAtMs: number;
  /** Not injected, and why (e.g. a NATS node stop while the streams' replicas were not current). */
  readonly skipped?: string;
  /** Injecting or healing threw (e.g. a restarted NATS node did not rejoin in time). */
  readonly healError?: string;
}
