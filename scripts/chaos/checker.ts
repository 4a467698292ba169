import { FAULT_KINDS, type FaultKind } from "./fault-schedule.js";
import type { ChaosHistory, InjectedFault, ObservedEvent, TimerHistory } from "./history.js";

/**
 * A firing claimed before a cancel or reschedule committed may still be stored after it: its publish
 * is in flight (the publisher's ack time-out, 5 s) and may sit in a frozen link for the longest
 * network fault (10 s) before the broker stores it. Later than this after the commit, an event of
 * the superseded timer is a firing the command did not stop.
 */
export const SUPERSEDED_GRACE_MS = 15_000;
/** How long after a clock step an event is judged with that step's allowance (claim to store, plus libfaketime's cache). */
export const CLOCK_STEP_REACH_MS = 15_000;
/** Timers due from a fault's start to this long after its heal are counted as that fault's. */
export const FAULT_ATTRIBUTION_MS = 10_000;
const MAX_LISTED = 25;

export type ViolationKind =
  | "lost"
  | "early"
  | "reached-before-due"
  | "fired-after-cancel"
  | "fired-superseded"
  | "msg-id-mismatch"
  | "unknown-event"
  | "recurring-drift"
  | "recurring-lost"
  | "stream-lost-messages";

export interface Violation {
  readonly kind: ViolationKind;
  readonly serviceCallId: string;
  readonly detail: string;
}

export interface FaultOutcome {
  readonly kind: FaultKind;
  readonly injected: number;
  readonly skipped: number;
  readonly timersDue: number;
  readonly lost: number;
  readonly early: number;
  readonly duplicates: number;
  readonly maxLatenessMs: number;
}

export interface ChaosSummary {
  readonly ok: boolean;
  readonly seed: number;
  readonly durationMs: number;
  readonly faults: { readonly injected: number; readonly skipped: number; readonly byKind: Record<string, number> };
  readonly timers: {
    readonly total: number;
    readonly byPlan: Record<string, number>;
    readonly mustFire: number;
    readonly undetermined: number;
  };
  readonly commands: { readonly sent: number; readonly accepted: number };
  /** `read` counts messages read twice by the consumer once each; `stored` does not. */
  readonly events: { readonly read: number; readonly stored: number; readonly distinct: number };
  readonly lost: number;
  readonly early: number;
  /** Stored before due by the real clock, but not before due by a clock stepped ahead on some instance at the time. */
  readonly earlyWithinClockStep: number;
  readonly reachedBeforeDue: number;
  readonly firedAfterCancel: number;
  /** Cancelled timers that fired because the firing was claimed before the cancel committed (allowed). */
  readonly firedBeforeCancelCommitted: number;
  /** Cancels that arrived after the timer had fired (Reached is final; allowed). */
  readonly cancelAfterFiring: number;
  readonly firedSuperseded: number;
  readonly duplicates: number;
  readonly msgIdMismatches: number;
  readonly recurring: {
    readonly timers: number;
    readonly events: number;
    readonly drift: number;
    readonly lostOccurrences: number;
    readonly coalescedOccurrences: number;
  };
  readonly latenessMs: { readonly p50: number; readonly p99: number; readonly max: number };
  readonly faultOutcomes: readonly FaultOutcome[];
  readonly violations: Record<string, number>;
  readonly violationExamples: readonly Violation[];
}

interface Required {
  readonly dueAtMs: number;
  /** Undefined: any generation of this timer will do. */
  readonly generation: number | undefined;
}

/** Judges a run's whole history. Pure: the same history gives the same summary. */
export function checkHistory(recorded: ChaosHistory): ChaosSummary {
  // One stored message read twice (the reader re-reads after recreating its consumer) has one store time.
  const seenCopies = new Set<string>();
  const events = recorded.events.filter((e) => {
    const copy = `${e.envelopeId}@${e.storedAtMs}`;
    return seenCopies.has(copy) ? false : (seenCopies.add(copy), true);
  });
  const history = { ...recorded, events };
  const violations: Violation[] = [];
  const eventsByTimer = groupBy(history.events, (e) => e.serviceCallId);
  const timersById = new Map(history.timers.map((t) => [t.serviceCallId, t]));
  const injected = history.faults.filter((f) => f.skipped === undefined);

  let undetermined = 0;
  let firedBeforeCancelCommitted = 0;
  let cancelAfterFiring = 0;
  const lateness: { dueAtMs: number; latenessMs: number }[] = [];
  const lostDueAt: number[] = [];
  const mustFire: Required[] = [];

  for (const timer of history.timers) {
    const events = eventsByTimer.get(timer.serviceCallId) ?? [];
    if (timer.plan === "recurring") continue;
    const judged = judgeOneShot(timer, events, violations);
    if (judged.required === undefined) undetermined += judged.undetermined ? 1 : 0;
    else {
      mustFire.push(judged.required);
      const hit = events.find(
        (e) =>
          e.dueAtMs === judged.required!.dueAtMs &&
          (judged.required!.generation === undefined || e.generation === judged.required!.generation),
      );
      if (hit === undefined) {
        lostDueAt.push(judged.required.dueAtMs);
        violations.push({
          kind: "lost",
          serviceCallId: timer.serviceCallId,
          detail: `no event due ${iso(judged.required.dueAtMs)} generation ${judged.required.generation ?? "any"}`,
        });
      } else lateness.push({ dueAtMs: hit.dueAtMs, latenessMs: firstStored(events, hit).storedAtMs - hit.dueAtMs });
    }
    firedBeforeCancelCommitted += judged.firedBeforeCancelCommitted ? 1 : 0;
    cancelAfterFiring += judged.cancelAfterFiring ? 1 : 0;
  }

  const recurring = judgeRecurring(history, eventsByTimer, violations, lateness);

  const earlyDueAt: number[] = [];
  let earlyWithinClockStep = 0;
  for (const event of history.events) {
    const timer = timersById.get(event.serviceCallId);
    if (timer === undefined) {
      violations.push({
        kind: "unknown-event",
        serviceCallId: event.serviceCallId,
        detail: `event ${event.envelopeId} for a timer never scheduled`,
      });
      continue;
    }
    const expectedId = `${history.tenantId}:${event.serviceCallId}:${event.dueAtMs}:${event.generation}`;
    if (event.msgId !== expectedId || event.envelopeId !== expectedId) {
      violations.push({
        kind: "msg-id-mismatch",
        serviceCallId: event.serviceCallId,
        detail: `Nats-Msg-Id ${event.msgId}, envelope id ${event.envelopeId}, expected ${expectedId}`,
      });
    }
    if (timer.plan !== "recurring" && !timer.commands.some((c) => c.kind === "schedule" && c.dueAtMs === event.dueAtMs)) {
      violations.push({
        kind: "unknown-event",
        serviceCallId: event.serviceCallId,
        detail: `event due ${iso(event.dueAtMs)} was never scheduled`,
      });
    }
    if (event.storedAtMs < event.dueAtMs) {
      const allowance = clockAheadAllowance(injected, event.storedAtMs);
      if (event.storedAtMs < event.dueAtMs - allowance) {
        earlyDueAt.push(event.dueAtMs);
        violations.push({
          kind: "early",
          serviceCallId: event.serviceCallId,
          detail: `stored ${event.dueAtMs - event.storedAtMs} ms before due ${iso(event.dueAtMs)} (clock allowance ${allowance} ms)`,
        });
      } else earlyWithinClockStep++;
    }
    if (event.reachedAtMs < event.dueAtMs && !clockSteppedBack(injected, event.storedAtMs)) {
      violations.push({
        kind: "reached-before-due",
        serviceCallId: event.serviceCallId,
        detail: `reachedAt ${iso(event.reachedAtMs)} before due ${iso(event.dueAtMs)}`,
      });
    }
  }
  if (history.streamLostTail > 0) {
    violations.push({
      kind: "stream-lost-messages",
      serviceCallId: "",
      detail: `the events stream lost stored messages ${history.streamLostTail} time(s)`,
    });
  }

  const duplicateEvents = duplicatesOf(history.events);
  const counts = countBy(violations, (v) => v.kind);
  const byPlan = countBy(history.timers, (t) => t.plan);
  const commands = history.timers.flatMap((t) => t.commands);
  const latencies = lateness.map((l) => l.latenessMs).sort((a, b) => a - b);

  return {
    ok: violations.length === 0,
    seed: history.seed,
    durationMs: history.healedAtMs - history.startedAtMs,
    faults: { injected: injected.length, skipped: history.faults.length - injected.length, byKind: countBy(injected, (f) => f.kind) },
    timers: { total: history.timers.length, byPlan, mustFire: mustFire.length, undetermined },
    commands: { sent: commands.length, accepted: commands.filter((c) => c.acceptedAtMs !== undefined).length },
    events: {
      read: recorded.events.length,
      stored: history.events.length,
      distinct: new Set(history.events.map((e) => e.envelopeId)).size,
    },
    lost: counts["lost"] ?? 0,
    early: counts["early"] ?? 0,
    earlyWithinClockStep,
    reachedBeforeDue: counts["reached-before-due"] ?? 0,
    firedAfterCancel: counts["fired-after-cancel"] ?? 0,
    firedBeforeCancelCommitted,
    cancelAfterFiring,
    firedSuperseded: counts["fired-superseded"] ?? 0,
    duplicates: duplicateEvents.length,
    msgIdMismatches: counts["msg-id-mismatch"] ?? 0,
    recurring,
    latenessMs: { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), max: latencies.at(-1) ?? 0 },
    faultOutcomes: faultOutcomes(history.faults, mustFire, lostDueAt, earlyDueAt, duplicateEvents, lateness),
    violations: counts,
    violationExamples: violations.slice(0, MAX_LISTED),
  };
}

interface OneShotJudgement {
  readonly required: Required | undefined;
  readonly undetermined: boolean;
  readonly firedBeforeCancelCommitted: boolean;
  readonly cancelAfterFiring: boolean;
}

/**
 * What a one-shot timer must have done. A command the stream never acknowledged may or may not have
 * been applied, so a timer whose outcome hangs on one is not required to fire (counted undetermined).
 */
function judgeOneShot(timer: TimerHistory, events: readonly ObservedEvent[], violations: Violation[]): OneShotJudgement {
  const [first, second] = timer.commands;
  const none = { required: undefined, undetermined: true, firedBeforeCancelCommitted: false, cancelAfterFiring: false };
  if (first === undefined || first.acceptedAtMs === undefined || first.dueAtMs === undefined) return none;
  const original: Required = { dueAtMs: first.dueAtMs, generation: 1 };
  if (second === undefined) return { ...none, required: original, undetermined: false };
  const readBack = timer.readBack;
  if (second.acceptedAtMs === undefined || readBack === undefined) {
    // The change may or may not have applied: either outcome is fine, one of them must fire unless it was a cancel.
    return second.kind === "cancel" ? none : { ...none, required: anyOf(timer, events), undetermined: false };
  }
  const superseded = (e: ObservedEvent): boolean => e.dueAtMs === first.dueAtMs && e.dueAtMs !== second.dueAtMs;
  if (readBack.state === "Reached" && readBack.dueAtMs === first.dueAtMs) {
    // The timer fired before the change committed; Reached is final.
    return {
      ...none,
      required: { dueAtMs: first.dueAtMs, generation: readBack.generation },
      undetermined: false,
      cancelAfterFiring: second.kind === "cancel",
    };
  }
  const lateOnes = events.filter((e) => superseded(e) && e.storedAtMs > readBack.observedAtMs + SUPERSEDED_GRACE_MS);
  for (const e of lateOnes) {
    violations.push({
      kind: second.kind === "cancel" ? "fired-after-cancel" : "fired-superseded",
      serviceCallId: timer.serviceCallId,
      detail: `event due ${iso(e.dueAtMs)} stored ${iso(e.storedAtMs)}, ${e.storedAtMs - readBack.observedAtMs} ms after the ${second.kind} was seen committed (${iso(readBack.observedAtMs)})`,
    });
  }
  if (second.kind === "cancel") {
    return { ...none, undetermined: false, firedBeforeCancelCommitted: events.some(superseded) && lateOnes.length === 0 };
  }
  // The generation is the read-back's: when the reschedule was applied before a redelivered first
  // schedule (older, so then ignored), the timer was created by the reschedule at generation 1.
  return { ...none, required: { dueAtMs: second.dueAtMs!, generation: readBack.generation }, undetermined: false };
}

/** With the reschedule's fate unknown: whichever due time fired, one of the two must have. */
function anyOf(timer: TimerHistory, events: readonly ObservedEvent[]): Required {
  const dues = timer.commands.filter((c) => c.kind === "schedule").map((c) => c.dueAtMs!);
  const hit = events.find((e) => dues.includes(e.dueAtMs));
  return { dueAtMs: hit?.dueAtMs ?? Math.max(...dues), generation: undefined };
}

function judgeRecurring(
  history: ChaosHistory,
  eventsByTimer: Map<string, ObservedEvent[]>,
  violations: Violation[],
  lateness: { dueAtMs: number; latenessMs: number }[],
): ChaosSummary["recurring"] {
  let drift = 0;
  let lostOccurrences = 0;
  let coalescedOccurrences = 0;
  let eventCount = 0;
  const recurring = history.timers.filter((t) => t.plan === "recurring");
  for (const timer of recurring) {
    const first = timer.commands[0];
    const everyMs = timer.everyMs;
    if (first?.acceptedAtMs === undefined || first.dueAtMs === undefined || everyMs === undefined) continue;
    const events = eventsByTimer.get(timer.serviceCallId) ?? [];
    eventCount += events.length;
    const covered = new Set<number>();
    for (const event of events) {
      const occurrence = event.occurrence ?? 0;
      const expectedDue = first.dueAtMs + (occurrence - 1) * everyMs;
      if (event.dueAtMs !== expectedDue) {
        drift++;
        violations.push({
          kind: "recurring-drift",
          serviceCallId: timer.serviceCallId,
          detail: `occurrence ${occurrence} due ${iso(event.dueAtMs)}, expected ${iso(expectedDue)}`,
        });
      }
      const missed = event.missedOccurrences ?? 0;
      coalescedOccurrences += missed;
      for (let n = occurrence - missed; n <= occurrence; n++) covered.add(n);
      lateness.push({ dueAtMs: event.dueAtMs, latenessMs: event.storedAtMs - event.dueAtMs });
    }
    // Every occurrence due before the faults were healed must be covered by an event (itself or coalesced).
    const dueBeforeHeal = Math.floor((history.healedAtMs - first.dueAtMs) / everyMs) + 1;
    for (let n = 1; n <= dueBeforeHeal; n++) {
      if (covered.has(n)) continue;
      lostOccurrences++;
      violations.push({
        kind: "recurring-lost",
        serviceCallId: timer.serviceCallId,
        detail: `occurrence ${n} due ${iso(first.dueAtMs + (n - 1) * everyMs)} has no event`,
      });
    }
  }
  return { timers: recurring.length, events: eventCount, drift, lostOccurrences, coalescedOccurrences };
}

/** The largest forward offset any instance's clock had around `atMs` (0 when none was stepped ahead). */
function clockAheadAllowance(faults: readonly InjectedFault[], atMs: number): number {
  return Math.max(0, ...faults.filter((f) => f.kind === "step-clock" && f.amount > 0 && near(f, atMs)).map((f) => f.amount));
}

/** A clock stepped back (a step back, or the heal of a step ahead) shortly before `atMs`. */
function clockSteppedBack(faults: readonly InjectedFault[], atMs: number): boolean {
  return faults.some((f) => f.kind === "step-clock" && near(f, atMs));
}

function near(fault: InjectedFault, atMs: number): boolean {
  return atMs >= fault.startedAtMs && atMs <= fault.healedAtMs + CLOCK_STEP_REACH_MS;
}

function duplicatesOf(events: readonly ObservedEvent[]): ObservedEvent[] {
  const seen = new Set<string>();
  return events.filter((e) => (seen.has(e.envelopeId) ? true : (seen.add(e.envelopeId), false)));
}

function faultOutcomes(
  faults: readonly InjectedFault[],
  mustFire: readonly Required[],
  lostDueAt: readonly number[],
  earlyDueAt: readonly number[],
  duplicates: readonly ObservedEvent[],
  lateness: readonly { dueAtMs: number; latenessMs: number }[],
): FaultOutcome[] {
  return FAULT_KINDS.map((kind) => {
    const ofKind = faults.filter((f) => f.kind === kind);
    const active = ofKind.filter((f) => f.skipped === undefined);
    const inWindow = (atMs: number): boolean => active.some((f) => atMs >= f.startedAtMs && atMs <= f.healedAtMs + FAULT_ATTRIBUTION_MS);
    return {
      kind,
      injected: active.length,
      skipped: ofKind.length - active.length,
      timersDue: mustFire.filter((r) => inWindow(r.dueAtMs)).length,
      lost: lostDueAt.filter(inWindow).length,
      early: earlyDueAt.filter(inWindow).length,
      duplicates: duplicates.filter((e) => inWindow(e.storedAtMs)).length,
      maxLatenessMs: Math.max(0, ...lateness.filter((l) => inWindow(l.dueAtMs)).map((l) => l.latenessMs)),
    };
  });
}

function firstStored(events: readonly ObservedEvent[], like: ObservedEvent): ObservedEvent {
  return events.filter((e) => e.envelopeId === like.envelopeId).reduce((a, b) => (b.storedAtMs < a.storedAtMs ? b : a));
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group === undefined) groups.set(k, [item]);
    else group.push(item);
  }
  return groups;
}

function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return counts;
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

function iso(ms: number): string {
  return Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms);
}
