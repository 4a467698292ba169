import { describe, expect, it } from "vitest";
import { decideCommand } from "../../../src/domain/command-rules.js";
import type { Timer, TimerState } from "../../../src/domain/timer.js";
import type { TimerCommand } from "../../../src/domain/timer-command.js";
import { appliedDecision } from "../../../src/app/applied-decision.js";
import { decisionOutcome } from "../../../src/app/commands/decision-outcome.js";

/** The reasons of outcomes the integration tests do not reach easily, from the domain's own decisions. */
const NOW = 1_800_000_000_000;

function timer(state: TimerState, fields: Partial<Timer> = {}): Timer {
  return {
    tenantId: "acme",
    serviceCallId: "a",
    state,
    dueAtMs: NOW - 1_000,
    data: null,
    correlationId: null,
    commandTs: 100,
    generation: 1,
    registeredAtMs: NOW - 5_000,
    reachedAtMs: null,
    updatedAtMs: NOW - 1_000,
    repeat: null,
    occurrence: 1,
    maxLatenessMs: null,
    ...fields,
  };
}

function outcomeOf(current: Timer | undefined, command: TimerCommand, prefixCancelTs: number | null = null) {
  const decision = appliedDecision(decideCommand(current, command, NOW, { prefixCancelTs }));
  if (decision.outcome === "refused") throw new Error("refused");
  return decisionOutcome(command, decision, { nowMs: NOW, retentionMs: 0, deliveryCount: 1 });
}

const key = { tenantId: "acme", serviceCallId: "a", correlationId: null } as const;

describe("decisionOutcome", () => {
  it("when a RetryTimer is newer than the Failed timer but not than a prefix cancel covering it, then it is ignored as blocked by the prefix cancel", () => {
    const outcome = outcomeOf(timer("Failed"), { kind: "retry", ...key, timestampMs: 200 }, 300);

    expect(outcome).toMatchObject({ outcome: "ignored", timer: { state: "Failed" } });
    expect(outcome.reason).toMatch(/^blocked by a prefix cancel/);
  });

  it("when a RetryTimer comes for a Scheduled timer, then it is ignored: only Failed, TimedOut and Missed timers are retried", () => {
    expect(outcomeOf(timer("Scheduled"), { kind: "retry", ...key, timestampMs: 200 }).reason).toBe(
      "timer closed to retries: it is Scheduled; only Failed, TimedOut and Missed timers are retried",
    );
  });

  it("when a report or a retry names an unknown timer, then it is ignored as unknown", () => {
    expect(outcomeOf(undefined, { kind: "complete", ...key, result: null, timestampMs: 200 }).reason).toMatch(/^unknown timer/);
    expect(outcomeOf(undefined, { kind: "retry", ...key, timestampMs: 200 }).reason).toMatch(/^unknown timer/);
  });

  it("when a TimerFailed comes while the next attempt already waits, then it is ignored: no publish in hand", () => {
    const waiting = timer("Fired", {
      delivery: { maxRetries: 3, backoffMs: 100, completionTimeoutMs: 1_000 },
      attempt: 1,
      reachedAtMs: null,
    });

    expect(outcomeOf(waiting, { kind: "fail", ...key, reason: "x", timestampMs: 200 }).reason).toBe(
      "no publish in hand: a retry is already waiting",
    );
  });

  it("when a Scheduled timer covered by a recorded prefix cancel gets a schedule not newer than it, then it is ignored as blocked, showing the timer Cancelled", () => {
    const outcome = outcomeOf(timer("Scheduled"), { kind: "schedule", ...key, dueAtMs: NOW, data: null, timestampMs: 200 }, 300);

    expect(outcome).toMatchObject({ outcome: "ignored", timer: { state: "Cancelled" } });
    expect(outcome.reason).toMatch(/^blocked by a prefix cancel/);
  });

  it("when a prefix is cancelled again at the same timestampMs, then it is ignored without a timer", () => {
    const outcome = outcomeOf(
      undefined,
      { kind: "cancelPrefix", tenantId: "acme", serviceCallIdPrefix: "a", correlationId: null, timestampMs: 300 },
      300,
    );

    expect(outcome).toEqual({
      outcome: "ignored",
      reason: "older or equal timestampMs: the prefix was already cancelled at the same or a later timestampMs",
    });
  });

  it("when a recurring timer is rescheduled, then its outcome names the occurrence", () => {
    const recurring = timer("Scheduled", {
      repeat: { everyMs: 60_000, untilMs: null, maxOccurrences: null, firstDueAtMs: NOW - 181_000 },
      occurrence: 4,
    });

    expect(outcomeOf(recurring, { kind: "cancel", ...key, timestampMs: 200 }).timer).toEqual({
      state: "Cancelled",
      dueAtMs: NOW - 1_000,
      generation: 1,
      occurrence: 4,
    });
  });
});
