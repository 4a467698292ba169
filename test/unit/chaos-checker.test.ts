import { describe, expect, it } from "vitest";
import { SUPERSEDED_GRACE_MS, checkHistory } from "../../scripts/chaos/checker.js";
import type { ChaosHistory, InjectedFault, ObservedEvent, TimerHistory } from "../../scripts/chaos/history.js";

const T0 = Date.UTC(2026, 10, 27, 1, 0, 0);
const TENANT = "chaos";

function event(serviceCallId: string, dueAtMs: number, storedAtMs: number, more: Partial<ObservedEvent> = {}): ObservedEvent {
  const generation = more.generation ?? 1;
  const id = `${TENANT}:${serviceCallId}:${dueAtMs}:${generation}`;
  return {
    serviceCallId,
    dueAtMs,
    reachedAtMs: storedAtMs - 5,
    storedAtMs,
    receivedAtMs: storedAtMs + 20,
    msgId: id,
    envelopeId: id,
    generation,
    occurrence: undefined,
    missedOccurrences: undefined,
    ...more,
  };
}

const once: TimerHistory = {
  serviceCallId: "once-0",
  plan: "once",
  commands: [{ kind: "schedule", timestampMs: T0, acceptedAtMs: T0 + 3, dueAtMs: T0 + 5_000 }],
};
const cancelled: TimerHistory = {
  serviceCallId: "cancel-1",
  plan: "cancel",
  commands: [
    { kind: "schedule", timestampMs: T0, acceptedAtMs: T0 + 3, dueAtMs: T0 + 10_000 },
    { kind: "cancel", timestampMs: T0 + 2_000, acceptedAtMs: T0 + 2_003 },
  ],
  readBack: { observedAtMs: T0 + 2_300, state: "Cancelled", generation: 1, dueAtMs: T0 + 10_000 },
};
const rescheduled: TimerHistory = {
  serviceCallId: "reschedule-2",
  plan: "reschedule",
  commands: [
    { kind: "schedule", timestampMs: T0, acceptedAtMs: T0 + 3, dueAtMs: T0 + 10_000 },
    { kind: "schedule", timestampMs: T0 + 2_000, acceptedAtMs: T0 + 2_003, dueAtMs: T0 + 4_000 },
  ],
  readBack: { observedAtMs: T0 + 2_300, state: "Scheduled", generation: 2, dueAtMs: T0 + 4_000 },
};
const recurring: TimerHistory = {
  serviceCallId: "recurring-0",
  plan: "recurring",
  everyMs: 3_000,
  commands: [{ kind: "schedule", timestampMs: T0, acceptedAtMs: T0 + 3, dueAtMs: T0 + 1_000 }],
};

/** Healed at T0 + 8 s: the recurring timer's occurrences 1–3 (due +1, +4, +7 s) must be covered. */
function history(events: ObservedEvent[], more: Partial<ChaosHistory> = {}): ChaosHistory {
  return {
    seed: 1,
    tenantId: TENANT,
    startedAtMs: T0,
    healedAtMs: T0 + 8_000,
    endedAtMs: T0 + 30_000,
    timers: [once, cancelled, rescheduled, recurring],
    events,
    faults: [],
    streamLostTail: 0,
    ...more,
  };
}

const recurringEvents = [1, 2, 3].map((n) =>
  event("recurring-0", T0 + 1_000 + (n - 1) * 3_000, T0 + 1_050 + (n - 1) * 3_000, { occurrence: n }),
);
const clean = [
  event("once-0", T0 + 5_000, T0 + 5_040),
  event("reschedule-2", T0 + 4_000, T0 + 4_030, { generation: 2 }),
  ...recurringEvents,
];

describe("chaos checker", () => {
  it("a clean history passes, with its lateness and counts", () => {
    const summary = checkHistory(history(clean));
    expect(summary.violations).toEqual({});
    expect(summary.ok).toBe(true);
    expect(summary.timers.mustFire).toBe(2);
    expect(summary.latenessMs.max).toBe(50);
    expect(summary.recurring.events).toBe(3);
  });

  it("a timer that never fired is lost", () => {
    const summary = checkHistory(history(clean.filter((e) => e.serviceCallId !== "once-0")));
    expect(summary.ok).toBe(false);
    expect(summary.lost).toBe(1);
  });

  it("a rescheduled timer that fired only at its old due time is lost, and that firing after the reschedule committed is superseded", () => {
    const stale = event("reschedule-2", T0 + 10_000, T0 + 2_300 + SUPERSEDED_GRACE_MS + 1);
    const summary = checkHistory(history([...clean.filter((e) => e.serviceCallId !== "reschedule-2"), stale]));
    expect(summary.lost).toBe(1);
    expect(summary.firedSuperseded).toBe(1);
  });

  it("an event stored before its due time is early", () => {
    const summary = checkHistory(history([...clean.slice(1), event("once-0", T0 + 5_000, T0 + 4_000, { reachedAtMs: T0 + 5_000 })]));
    expect(summary.early).toBe(1);
    expect(summary.ok).toBe(false);
  });

  it("an event stored before due is within the allowance while an instance's clock is stepped ahead, but its reachedAt must not be before due", () => {
    const step: InjectedFault = { kind: "step-clock", target: 0, amount: 30_000, startedAtMs: T0 + 3_000, healedAtMs: T0 + 6_000 };
    const ahead = event("once-0", T0 + 5_000, T0 + 4_000, { reachedAtMs: T0 + 5_001 });
    const summary = checkHistory(history([...clean.slice(1), ahead], { faults: [step] }));
    expect(summary.early).toBe(0);
    expect(summary.earlyWithinClockStep).toBe(1);
    expect(summary.ok).toBe(true);
    const byOwnClock = checkHistory(history([...clean.slice(1), { ...ahead, reachedAtMs: T0 + 4_000 }]));
    expect(byOwnClock.reachedBeforeDue).toBe(1);
  });

  it("a cancelled timer that fired well after its cancel committed is caught; one fired before is counted, not a violation", () => {
    const late = event("cancel-1", T0 + 10_000, T0 + 2_300 + SUPERSEDED_GRACE_MS + 1);
    expect(checkHistory(history([...clean, late])).firedAfterCancel).toBe(1);
    const raced = event("cancel-1", T0 + 10_000, T0 + 10_010);
    const summary = checkHistory(history([...clean, raced]));
    expect(summary.firedAfterCancel).toBe(0);
    expect(summary.firedBeforeCancelCommitted).toBe(1);
    expect(summary.ok).toBe(true);
  });

  it("duplicates are counted; one with another Nats-Msg-Id is a violation", () => {
    const again = { ...clean[0]!, storedAtMs: T0 + 9_000 };
    const counted = checkHistory(history([...clean, again]));
    expect(counted.duplicates).toBe(1);
    expect(counted.ok).toBe(true);
    const summary = checkHistory(history([...clean, { ...again, msgId: `${TENANT}:once-0:${T0 + 5_000}:2` }]));
    expect(summary.msgIdMismatches).toBe(1);
    expect(summary.ok).toBe(false);
  });

  it("one stored message read twice by the consumer is not a duplicate", () => {
    const reread = { ...clean[0]!, receivedAtMs: T0 + 60_000 };
    const summary = checkHistory(history([...clean, reread]));
    expect(summary.duplicates).toBe(0);
    expect(summary.events).toMatchObject({ read: clean.length + 1, stored: clean.length });
  });

  it("a reschedule applied before its redelivered first schedule fires at the new due time with generation 1", () => {
    const first = { ...rescheduled, readBack: { observedAtMs: T0 + 4_100, state: "Reached", generation: 1, dueAtMs: T0 + 4_000 } };
    const events = [...clean.filter((e) => e.serviceCallId !== "reschedule-2"), event("reschedule-2", T0 + 4_000, T0 + 4_030)];
    const summary = checkHistory({ ...history(events), timers: [once, cancelled, first, recurring] });
    expect(summary.violations).toEqual({});
    const missing = checkHistory({
      ...history(events.filter((e) => e.serviceCallId !== "reschedule-2")),
      timers: [once, cancelled, first, recurring],
    });
    expect(missing.lost).toBe(1);
  });

  it("a recurring occurrence off its period is drift; one missing is lost, one coalesced is not", () => {
    const drifted = [...recurringEvents.slice(0, 2), { ...recurringEvents[2]!, dueAtMs: T0 + 7_250 }];
    expect(checkHistory(history([...clean.slice(0, 2), ...drifted])).recurring.drift).toBe(1);
    const missing = checkHistory(history([...clean.slice(0, 2), recurringEvents[0]!, recurringEvents[2]!]));
    expect(missing.recurring.lostOccurrences).toBe(1);
    expect(missing.ok).toBe(false);
    const coalesced = checkHistory(history([...clean.slice(0, 2), recurringEvents[0]!, { ...recurringEvents[2]!, missedOccurrences: 1 }]));
    expect(coalesced.recurring.coalescedOccurrences).toBe(1);
    expect(coalesced.ok).toBe(true);
  });

  it("an event for a timer or due time never scheduled is a violation", () => {
    expect(checkHistory(history([...clean, event("ghost", T0 + 1_000, T0 + 1_010)])).violations["unknown-event"]).toBe(1);
  });

  it("messages the events stream lost are a violation", () => {
    expect(checkHistory(history(clean, { streamLostTail: 1 })).ok).toBe(false);
  });

  it("faults are counted by kind with the outcomes of the timers due while they lasted", () => {
    const kill: InjectedFault = { kind: "kill-instance", target: 1, amount: 0, startedAtMs: T0 + 4_500, healedAtMs: T0 + 5_500 };
    const summary = checkHistory(
      history(
        clean.filter((e) => e.serviceCallId !== "once-0"),
        { faults: [kill] },
      ),
    );
    expect(summary.faults.byKind).toEqual({ "kill-instance": 1 });
    expect(summary.faultOutcomes.find((o) => o.kind === "kill-instance")).toMatchObject({ injected: 1, timersDue: 1, lost: 1 });
  });
});
