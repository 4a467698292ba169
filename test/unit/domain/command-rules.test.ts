import { describe, expect, it } from "vitest";
import type { Timer } from "../../../src/domain/timer.js";
import type { CancelTimerCommand, ScheduleTimerCommand } from "../../../src/domain/timer-command.js";
import { decideCommand, scheduledDelta, type CommandDecision } from "../../../src/domain/command-rules.js";

const NOW = 1_764_108_000_000;
const LATER = NOW + 5_000;

function schedule(fields: Partial<ScheduleTimerCommand> = {}): ScheduleTimerCommand {
  return {
    kind: "schedule",
    tenantId: "acme",
    serviceCallId: "call-1",
    dueAtMs: NOW + 60_000,
    data: '{"order":42}',
    correlationId: "req-1",
    timestampMs: 100,
    ...fields,
  };
}

function cancel(fields: Partial<CancelTimerCommand> = {}): CancelTimerCommand {
  return { kind: "cancel", tenantId: "acme", serviceCallId: "call-1", correlationId: null, timestampMs: 100, ...fields };
}

function timer(fields: Partial<Timer> = {}): Timer {
  return {
    tenantId: "acme",
    serviceCallId: "call-1",
    state: "Scheduled",
    dueAtMs: NOW + 60_000,
    data: '{"order":42}',
    correlationId: "req-1",
    commandTs: 100,
    generation: 1,
    registeredAtMs: NOW - 1_000,
    reachedAtMs: null,
    updatedAtMs: NOW - 1_000,
    repeat: null,
    occurrence: 1,
    maxLatenessMs: null,
    ...fields,
  };
}

describe("decideCommand: ScheduleTimer (CONTRACT §3.3)", () => {
  it("when the key is unknown, then a Scheduled timer is created with the command's fields", () => {
    const decision = decideCommand(undefined, schedule({ timestampMs: 7 }), NOW);

    expect(decision).toEqual({
      outcome: "accepted",
      previous: undefined,
      next: {
        tenantId: "acme",
        serviceCallId: "call-1",
        state: "Scheduled",
        dueAtMs: NOW + 60_000,
        data: '{"order":42}',
        correlationId: "req-1",
        commandTs: 7,
        generation: 1,
        registeredAtMs: NOW,
        reachedAtMs: null,
        updatedAtMs: NOW,
        repeat: null,
        occurrence: 1,
        maxLatenessMs: null,
      },
    });
  });

  it("when the key is unknown and the command has no data or correlationId, then they are stored as null", () => {
    const decision = decideCommand(undefined, schedule({ data: null, correlationId: null }), NOW);

    expect(decision.next).toMatchObject({ data: null, correlationId: null, state: "Scheduled" });
  });

  it("when the timer is Scheduled and a newer schedule arrives, then dueAt, data and correlationId are replaced", () => {
    const current = timer({ commandTs: 100 });
    const decision = decideCommand(
      current,
      schedule({ dueAtMs: NOW + 120_000, data: '"v2"', correlationId: "req-2", timestampMs: 200 }),
      LATER,
    );

    expect(decision.outcome).toBe("accepted");
    expect(decision.previous).toBe(current);
    expect(decision.next).toEqual({
      ...current,
      dueAtMs: NOW + 120_000,
      data: '"v2"',
      correlationId: "req-2",
      commandTs: 200,
      generation: current.generation + 1,
      updatedAtMs: LATER,
    });
  });

  it("when a reschedule clears data and correlationId, then they become null (not kept from before)", () => {
    const decision = decideCommand(timer(), schedule({ data: null, correlationId: null, timestampMs: 200 }), LATER);

    expect(decision.outcome).toBe("accepted");
    expect(decision.next).toMatchObject({ data: null, correlationId: null, dueAtMs: NOW + 60_000 });
  });

  it("when only the data of a Scheduled timer changes, then the schedule is accepted", () => {
    const decision = decideCommand(timer(), schedule({ data: '{"order":43}', timestampMs: 200 }), LATER);

    expect(decision.outcome).toBe("accepted");
    expect(decision.next?.data).toBe('{"order":43}');
  });

  it("when only the correlationId of a Scheduled timer changes, then the schedule is accepted", () => {
    const decision = decideCommand(timer(), schedule({ correlationId: "req-9", timestampMs: 200 }), LATER);

    expect(decision.outcome).toBe("accepted");
    expect(decision.next?.correlationId).toBe("req-9");
  });

  it("when a different schedule has the same timestampMs as the Scheduled timer, then the last applied wins", () => {
    const decision = decideCommand(timer({ commandTs: 100 }), schedule({ dueAtMs: NOW + 1, timestampMs: 100 }), LATER);

    expect(decision.outcome).toBe("accepted");
    expect(decision.next).toMatchObject({ state: "Scheduled", dueAtMs: NOW + 1, commandTs: 100 });
  });

  it("when a Cancelled timer gets a schedule with a newer timestampMs, then it is re-armed as Scheduled", () => {
    const current = timer({ state: "Cancelled", commandTs: 100 });
    const decision = decideCommand(current, schedule({ dueAtMs: NOW + 30_000, timestampMs: 101 }), LATER);

    expect(decision.outcome).toBe("accepted");
    expect(decision.next).toMatchObject({ state: "Scheduled", dueAtMs: NOW + 30_000, commandTs: 101, updatedAtMs: LATER });
  });

  it("when a Cancelled timer is re-armed with exactly its old dueAt, data and correlationId, then it is accepted (the state changes)", () => {
    const current = timer({ state: "Cancelled", commandTs: 100 });
    const decision = decideCommand(current, schedule({ timestampMs: 101 }), LATER);

    expect(decision.outcome).toBe("accepted");
    expect(decision.next?.state).toBe("Scheduled");
  });

  it("when a tombstone (cancel of an unknown key) gets a newer schedule, then it is re-armed", () => {
    const tombstone = timer({ state: "Cancelled", dueAtMs: null, data: null, correlationId: null, commandTs: 100 });
    const decision = decideCommand(tombstone, schedule({ timestampMs: 150 }), LATER);

    expect(decision.outcome).toBe("accepted");
    expect(decision.next).toMatchObject({ state: "Scheduled", dueAtMs: NOW + 60_000, data: '{"order":42}', commandTs: 150 });
  });
});

describe("decideCommand: order of commands (CONTRACT §3.2)", () => {
  it("when a schedule is older than the Scheduled timer's commandTs, then it is ignored and nothing is stored", () => {
    const decision = decideCommand(timer({ commandTs: 100 }), schedule({ dueAtMs: NOW + 1, timestampMs: 99 }), LATER);

    expect(decision.outcome).toBe("ignored");
    expect(decision.next).toBeUndefined();
  });

  it("when a schedule is older than the Cancelled timer's commandTs, then it is ignored (a late schedule cannot resurrect)", () => {
    const decision = decideCommand(timer({ state: "Cancelled", commandTs: 100 }), schedule({ timestampMs: 50 }), LATER);

    expect(decision).toEqual({ outcome: "ignored", previous: expect.objectContaining({ state: "Cancelled" }) });
  });

  it("when a cancel is older than the Scheduled timer's commandTs, then it is ignored and the timer stays Scheduled", () => {
    const decision = decideCommand(timer({ commandTs: 100 }), cancel({ timestampMs: 99 }), LATER);

    expect(decision.outcome).toBe("ignored");
    expect(decision.next).toBeUndefined();
  });

  it("when a schedule has the same timestampMs as the cancel of a Cancelled timer, then the cancel wins and the schedule is ignored", () => {
    const decision = decideCommand(timer({ state: "Cancelled", commandTs: 100 }), schedule({ timestampMs: 100 }), LATER);

    expect(decision.outcome).toBe("ignored");
    expect(decision.next).toBeUndefined();
  });

  it("when a cancel has the same timestampMs as the schedule of a Scheduled timer, then the cancel applies", () => {
    const decision = decideCommand(timer({ commandTs: 100 }), cancel({ timestampMs: 100 }), LATER);

    expect(decision.outcome).toBe("accepted");
    expect(decision.next).toMatchObject({ state: "Cancelled", commandTs: 100, updatedAtMs: LATER });
  });

  it("when an identical schedule arrives with a newer timestampMs, then it is ignored but the new commandTs is stored", () => {
    const current = timer({ commandTs: 100 });
    const decision = decideCommand(current, schedule({ timestampMs: 300 }), LATER);

    expect(decision.outcome).toBe("ignored");
    expect(decision.next).toEqual({ ...current, commandTs: 300, updatedAtMs: LATER });
  });

  it("when an identical schedule arrives with the same timestampMs (a redelivery), then it is ignored and nothing is stored", () => {
    const decision = decideCommand(timer({ commandTs: 100 }), schedule({ timestampMs: 100 }), LATER);

    expect(decision.outcome).toBe("ignored");
    expect(decision.next).toBeUndefined();
  });

  it("when an identical schedule arrives, then the stored commandTs never moves backwards", () => {
    const decision = decideCommand(timer({ commandTs: 100 }), schedule({ timestampMs: 90 }), LATER);

    expect(decision.next).toBeUndefined();
  });
});

describe("decideCommand: Reached is final (CONTRACT §3.4)", () => {
  const reached = timer({ state: "Reached", reachedAtMs: NOW, commandTs: 100 });

  it("when a newer schedule arrives for a Reached timer, then it is refused as TIMER_FINAL and nothing is stored (CONTRACT §17)", () => {
    const decision = decideCommand(reached, schedule({ dueAtMs: NOW + 999_999, timestampMs: 500 }), LATER);

    expect(decision).toEqual({ outcome: "refused", previous: reached, code: "TIMER_FINAL", reason: expect.any(String) });
    const reason = (decision as { reason: string }).reason;
    expect(reason).toContain(`is Reached since ${new Date(NOW).toISOString()}`);
    expect(reason).toContain("a new serviceCallId");
    expect(reason).not.toContain("RetryTimer");
  });

  it.each([
    ["Missed", { reachedAtMs: NOW }, NOW, true],
    ["Failed", { updatedAtMs: NOW + 5 }, NOW + 5, true],
    ["TimedOut", { updatedAtMs: NOW + 6 }, NOW + 6, true],
    ["Completed", { completedAtMs: NOW + 7 }, NOW + 7, false],
    ["Fired", { firedAtMs: NOW + 8 }, NOW + 8, false],
  ] as const)(
    "when a newer schedule arrives for a %s timer, then TIMER_FINAL names the state, since when and what to do",
    (state, members, sinceMs, retryable) => {
      const closed = timer({ state, commandTs: 100, ...members });
      const decision = decideCommand(closed, schedule({ timestampMs: 101 }), LATER);

      expect(decision).toMatchObject({ outcome: "refused", code: "TIMER_FINAL", previous: closed });
      const reason = (decision as { reason: string }).reason;
      expect(reason).toContain(`is ${state} since ${new Date(sinceMs).toISOString()}`);
      expect(reason.includes("send RetryTimer")).toBe(retryable);
    },
  );

  it("when a newer cancel arrives for a Reached timer, then it is ignored and nothing is stored", () => {
    const decision = decideCommand(reached, cancel({ timestampMs: 500 }), LATER);

    expect(decision).toEqual({ outcome: "ignored", previous: reached });
  });

  it("when an identical schedule arrives for a Reached timer, then it is ignored", () => {
    const decision = decideCommand(reached, schedule({ timestampMs: 100 }), LATER);

    expect(decision.outcome).toBe("ignored");
    expect(decision.next).toBeUndefined();
  });
});

describe("decideCommand: CancelTimer (CONTRACT §3.5)", () => {
  it("when a Scheduled timer is cancelled, then it becomes Cancelled with the cancel's timestampMs", () => {
    const current = timer({ commandTs: 100 });
    const decision = decideCommand(current, cancel({ timestampMs: 200 }), LATER);

    expect(decision.outcome).toBe("accepted");
    expect(decision.previous).toBe(current);
    expect(decision.next).toEqual({ ...current, state: "Cancelled", commandTs: 200, updatedAtMs: LATER });
  });

  it("when the key is unknown, then a Cancelled tombstone without a due time is recorded", () => {
    const decision = decideCommand(undefined, cancel({ timestampMs: 77, serviceCallId: "ghost" }), NOW);

    expect(decision).toEqual({
      outcome: "accepted",
      previous: undefined,
      next: {
        tenantId: "acme",
        serviceCallId: "ghost",
        state: "Cancelled",
        dueAtMs: null,
        data: null,
        correlationId: null,
        commandTs: 77,
        generation: 1,
        registeredAtMs: NOW,
        reachedAtMs: null,
        updatedAtMs: NOW,
        repeat: null,
        occurrence: 1,
        maxLatenessMs: null,
      },
    });
  });

  it("when a Cancelled timer gets a newer cancel, then it is ignored but the new commandTs is stored", () => {
    const current = timer({ state: "Cancelled", commandTs: 100 });
    const decision = decideCommand(current, cancel({ timestampMs: 400 }), LATER);

    expect(decision.outcome).toBe("ignored");
    expect(decision.next).toEqual({ ...current, commandTs: 400, updatedAtMs: LATER });
  });

  it("when a Cancelled timer gets the same cancel again, then it is ignored and nothing is stored", () => {
    const decision = decideCommand(timer({ state: "Cancelled", commandTs: 100 }), cancel({ timestampMs: 100 }), LATER);

    expect(decision.outcome).toBe("ignored");
    expect(decision.next).toBeUndefined();
  });

  it("when a Cancelled timer gets an older cancel, then it is ignored and nothing is stored", () => {
    const decision = decideCommand(timer({ state: "Cancelled", commandTs: 100 }), cancel({ timestampMs: 10 }), LATER);

    expect(decision.outcome).toBe("ignored");
    expect(decision.next).toBeUndefined();
  });
});

describe("scheduledDelta", () => {
  const cases: [string, CommandDecision, number][] = [
    ["a new Scheduled timer", decideCommand(undefined, schedule(), NOW), 1],
    ["a new tombstone", decideCommand(undefined, cancel(), NOW), 0],
    ["a Scheduled timer cancelled", decideCommand(timer(), cancel({ timestampMs: 200 }), NOW), -1],
    ["a Scheduled timer rescheduled", decideCommand(timer(), schedule({ dueAtMs: NOW, timestampMs: 200 }), NOW), 0],
    ["a Cancelled timer re-armed", decideCommand(timer({ state: "Cancelled" }), schedule({ timestampMs: 200 }), NOW), 1],
    ["a commandTs bump of a Scheduled timer", decideCommand(timer(), schedule({ timestampMs: 200 }), NOW), 0],
    ["a commandTs bump of a Cancelled timer", decideCommand(timer({ state: "Cancelled" }), cancel({ timestampMs: 200 }), NOW), 0],
    ["an ignored stale schedule", decideCommand(timer(), schedule({ timestampMs: 1 }), NOW), 0],
    ["an ignored command on a Reached timer", decideCommand(timer({ state: "Reached" }), cancel({ timestampMs: 200 }), NOW), 0],
  ];

  it.each(cases.map(([name, decision, delta]) => ({ name, decision, delta })))(
    "when the decision is $name, then the number of Scheduled timers moves by $delta",
    ({ decision, delta }) => {
      expect(scheduledDelta(decision)).toBe(delta);
    },
  );
});

describe("decideCommand: generation (CONTRACT §10)", () => {
  it("when a schedule changes a Scheduled timer, then the generation grows by one", () => {
    const decision = decideCommand(timer({ generation: 4 }), schedule({ dueAtMs: NOW + 1, timestampMs: 200 }), LATER);

    expect(decision.next?.generation).toBe(5);
  });

  it("when a schedule re-arms a Cancelled timer with the same content, then the generation grows by one", () => {
    const decision = decideCommand(timer({ state: "Cancelled", generation: 2 }), schedule({ timestampMs: 200 }), LATER);

    expect(decision.next).toMatchObject({ state: "Scheduled", generation: 3 });
  });

  it("when a schedule repeats the timer as it is, then the generation stays", () => {
    const current = timer({ generation: 2 });
    const decision = decideCommand(
      current,
      schedule({ dueAtMs: current.dueAtMs!, data: current.data, correlationId: current.correlationId, timestampMs: 200 }),
      LATER,
    );

    expect(decision.outcome).toBe("ignored");
    expect(decision.next?.generation).toBe(2);
  });

  it("when a Scheduled timer is cancelled, then the generation stays", () => {
    const decision = decideCommand(timer({ generation: 2 }), cancel({ timestampMs: 200 }), LATER);

    expect(decision.next).toMatchObject({ state: "Cancelled", generation: 2 });
  });
});
