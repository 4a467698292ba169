import { describe, expect, it } from "vitest";
import { decideDeadline, decideReport, retryDelayMs, type DeadlineTimer, type DeliveryPolicy } from "../../../src/domain/delivery-rules.js";
import { decideFiring, type FiringTimer } from "../../../src/domain/firing-rules.js";
import { decideCommand } from "../../../src/domain/command-rules.js";
import type { Timer } from "../../../src/domain/timer.js";
import type { ReportCommand } from "../../../src/domain/timer-command.js";
import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";

const POLICY: DeliveryPolicy = { maxRetries: 2, backoffMs: 1_000, completionTimeoutMs: 10_000 };
const calendar = new CronerCalendar();

function fired(fields: Partial<Timer> = {}): Timer {
  return {
    tenantId: "acme",
    serviceCallId: "s",
    state: "Fired",
    dueAtMs: 100,
    data: null,
    correlationId: null,
    commandTs: 50,
    generation: 1,
    registeredAtMs: 0,
    reachedAtMs: 1_000,
    updatedAtMs: 1_000,
    repeat: null,
    occurrence: 1,
    maxLatenessMs: null,
    delivery: POLICY,
    attempt: 1,
    firedAtMs: 1_000,
    deadlineAtMs: 11_000,
    ...fields,
  };
}
const complete = (timestampMs = 60, result: string | null = null): ReportCommand => ({
  kind: "complete",
  tenantId: "acme",
  serviceCallId: "s",
  result,
  correlationId: null,
  timestampMs,
});
const fail = (timestampMs = 60, reason = "boom"): ReportCommand => ({
  kind: "fail",
  tenantId: "acme",
  serviceCallId: "s",
  reason,
  correlationId: null,
  timestampMs,
});
const asDeadline = (timer: Timer): DeadlineTimer => ({
  ...timer,
  delivery: timer.delivery!,
  attempt: timer.attempt!,
  deadlineAtMs: timer.deadlineAtMs!,
});

describe("retryDelayMs", () => {
  it("when attempt n failed, then the wait is backoffMs × 2^(n−1)", () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMs(POLICY, n))).toEqual([1_000, 2_000, 4_000, 8_000]);
  });
});

describe("firing a tracked timer", () => {
  it("when a timer with delivery fires, then it becomes Fired at attempt 1 with its completion time-out as deadline", () => {
    const timer = { ...fired({ state: "Scheduled", reachedAtMs: null }) } as FiringTimer;
    const decision = decideFiring(timer, 2_000, calendar, null);
    expect(decision.kind).toBe("reached");
    expect(decision.next).toMatchObject({
      state: "Fired",
      reachedAtMs: 2_000,
      tracking: { attempt: 1, firedAtMs: 2_000, deadlineAtMs: 12_000 },
    });
  });

  it("when a timer with delivery is too late, then it is Missed and not tracked", () => {
    const timer = { ...fired({ state: "Scheduled", maxLatenessMs: 10 }) } as FiringTimer;
    expect(decideFiring(timer, 2_000, calendar, null).next).toMatchObject({ state: "Missed" });
  });
});

describe("decideReport", () => {
  it("when TimerCompleted reaches a Fired timer, then it is Completed with the report time and result", () => {
    const decision = decideReport(fired(), complete(60, "ok"), 3_500);
    expect(decision.outcome).toBe("accepted");
    expect(decision.next).toMatchObject({ state: "Completed", completedAtMs: 3_500, result: "ok", deadlineAtMs: null, commandTs: 60 });
  });

  it("when TimerFailed reaches a Fired timer with attempts left, then the retry waits its backoff", () => {
    const decision = decideReport(fired({ attempt: 2 }), fail(60, "503"), 5_000);
    expect(decision.next).toMatchObject({ state: "Fired", lastReason: "503", reachedAtMs: null, deadlineAtMs: 7_000, attempt: 2 });
  });

  it("when TimerFailed reaches the last attempt, then the timer is Failed", () => {
    expect(decideReport(fired({ attempt: 3 }), fail(), 5_000).next).toMatchObject({
      state: "Failed",
      lastReason: "boom",
      deadlineAtMs: null,
    });
  });

  it("when maxRetries is 0, then the first failure is final", () => {
    expect(decideReport(fired({ delivery: { ...POLICY, maxRetries: 0 } }), fail(), 5_000).next).toMatchObject({ state: "Failed" });
  });

  it.each<[string, Timer | undefined]>([
    ["unknown", undefined],
    ["Scheduled (not yet due)", fired({ state: "Scheduled", dueAtMs: 999_999 })],
    ["Reached (no delivery)", fired({ state: "Reached", delivery: null })],
    ["Fired without delivery", fired({ delivery: null })],
    ["Completed", fired({ state: "Completed" })],
    ["Failed", fired({ state: "Failed" })],
    ["TimedOut", fired({ state: "TimedOut" })],
  ])("when the timer is %s, then reports are ignored", (_, timer) => {
    expect(decideReport(timer, complete(), 5_000)).toEqual({ outcome: "ignored", previous: timer });
    expect(decideReport(timer, fail(), 5_000)).toEqual({ outcome: "ignored", previous: timer });
  });

  it("when a tracked timer is due but not yet recorded Fired, then a report is ignored but worth retrying (it may have overtaken the record)", () => {
    const due = fired({ state: "Scheduled", dueAtMs: 4_000 });
    expect(decideReport(due, complete(), 5_000)).toEqual({ outcome: "ignored", previous: due, retryLater: true });
    const untracked = fired({ state: "Scheduled", dueAtMs: 4_000, delivery: null });
    expect(decideReport(untracked, complete(), 5_000)).toEqual({ outcome: "ignored", previous: untracked });
  });

  it("when a report is older than the timer's last command, then it is ignored (§3.2)", () => {
    expect(decideReport(fired({ commandTs: 70 }), complete(69), 5_000).outcome).toBe("ignored");
    expect(decideReport(fired({ commandTs: 70 }), fail(69), 5_000).outcome).toBe("ignored");
  });

  it("when a TimerFailed is redelivered after its retry went out, then it does not count twice", () => {
    const afterRetry = fired({ attempt: 2, commandTs: 60, reachedAtMs: 9_000 });
    expect(decideReport(afterRetry, fail(60), 9_500).outcome).toBe("ignored");
    expect(decideReport(afterRetry, fail(61), 9_500).outcome).toBe("accepted");
  });

  it("when a retry is waiting, then a TimerFailed is ignored and a TimerCompleted completes", () => {
    const waiting = fired({ reachedAtMs: null, lastReason: "x", commandTs: 60, deadlineAtMs: 6_000 });
    expect(decideReport(waiting, fail(61), 5_500).outcome).toBe("ignored");
    expect(decideReport(waiting, complete(61), 5_500).next).toMatchObject({ state: "Completed" });
  });

  it("when a CancelTimer or a newer ScheduleTimer reaches a Fired timer, then the cancel is ignored and the schedule refused (its event is out)", () => {
    const timer = fired();
    expect(
      decideCommand(timer, { kind: "cancel", tenantId: "acme", serviceCallId: "s", correlationId: null, timestampMs: 99 }, 5_000).outcome,
    ).toBe("ignored");
    expect(
      decideCommand(
        timer,
        { kind: "schedule", tenantId: "acme", serviceCallId: "s", dueAtMs: 1, data: null, correlationId: null, timestampMs: 99 },
        5_000,
      ),
    ).toMatchObject({ outcome: "refused", code: "TIMER_FINAL" });
  });
});

describe("decideDeadline", () => {
  it("when a waiting retry's deadline passes, then attempt + 1 is published and its completion time-out runs", () => {
    const decision = decideDeadline(asDeadline(fired({ reachedAtMs: null, lastReason: "x", deadlineAtMs: 6_000 })), 6_010);
    expect(decision).toEqual({
      kind: "retry",
      next: { state: "Fired", attempt: 2, reachedAtMs: 6_010, deadlineAtMs: 16_010, lastReason: "x", updatedAtMs: 6_010 },
    });
  });

  it("when the completion time-out passes with attempts left, then a timeout failure is counted and the retry waits", () => {
    const decision = decideDeadline(asDeadline(fired({ attempt: 2 })), 11_000);
    expect(decision).toEqual({
      kind: "timeout",
      next: { state: "Fired", attempt: 2, reachedAtMs: null, deadlineAtMs: 13_000, lastReason: "timeout", updatedAtMs: 11_000 },
    });
  });

  it("when the completion time-out of the last attempt passes, then the timer is TimedOut", () => {
    const decision = decideDeadline(asDeadline(fired({ attempt: 3 })), 11_000);
    expect(decision.kind).toBe("timedOut");
    expect(decision.next).toMatchObject({ state: "TimedOut", deadlineAtMs: null, lastReason: "timeout" });
  });

  it("when the last attempt fails by a report instead, then the timer is Failed, not TimedOut", () => {
    expect(decideReport(fired({ attempt: 3 }), fail(60, "timeout-ish"), 1).next).toMatchObject({ state: "Failed" });
  });
});

describe("ScheduleTimer with delivery", () => {
  it("when a tracked timer is created, then delivery and the audit members are stored; a later schedule keeps the creator", () => {
    const first = decideCommand(
      undefined,
      {
        kind: "schedule",
        tenantId: "acme",
        serviceCallId: "s",
        dueAtMs: 5,
        data: null,
        correlationId: null,
        timestampMs: 1,
        delivery: POLICY,
        createdBy: "alice",
        createdVia: "api",
      },
      0,
    );
    expect(first.next).toMatchObject({ delivery: POLICY, createdBy: "alice", createdVia: "api" });
    const moved = decideCommand(
      first.next,
      {
        kind: "schedule",
        tenantId: "acme",
        serviceCallId: "s",
        dueAtMs: 9,
        data: null,
        correlationId: null,
        timestampMs: 2,
        createdBy: "bob",
      },
      0,
    );
    expect(moved.next).toMatchObject({ delivery: null, createdBy: "alice", generation: 2 });
  });

  it("when only the delivery policy changes, then it is stored without a new generation", () => {
    const first = decideCommand(
      undefined,
      { kind: "schedule", tenantId: "acme", serviceCallId: "s", dueAtMs: 5, data: null, correlationId: null, timestampMs: 1 },
      0,
    );
    const changed = decideCommand(
      first.next,
      {
        kind: "schedule",
        tenantId: "acme",
        serviceCallId: "s",
        dueAtMs: 5,
        data: null,
        correlationId: null,
        timestampMs: 2,
        delivery: POLICY,
      },
      0,
    );
    expect(changed).toMatchObject({ outcome: "accepted", next: { delivery: POLICY, generation: 1 } });
  });
});
