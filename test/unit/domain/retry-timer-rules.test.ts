import { describe, expect, it } from "vitest";
import { decideCommand } from "../../../src/domain/command-rules.js";
import { decideFiring } from "../../../src/domain/firing-rules.js";
import type { Timer, TimerState } from "../../../src/domain/timer.js";
import type { RetryTimerCommand } from "../../../src/domain/timer-command.js";
import type { DeliveryPolicy } from "../../../src/domain/delivery-rules.js";
import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";
import { FakeClock, T0 } from "../../support/fakes/fake-clock.js";

const POLICY: DeliveryPolicy = { maxRetries: 1, backoffMs: 1_000, completionTimeoutMs: 10_000 };

function timer(state: TimerState, fields: Partial<Timer> = {}): Timer {
  return {
    tenantId: "acme",
    serviceCallId: "s",
    state,
    dueAtMs: T0 - 60_000,
    data: '{"n":1}',
    correlationId: "c1",
    commandTs: T0 - 120_000,
    generation: 3,
    registeredAtMs: T0 - 120_000,
    reachedAtMs: T0 - 59_000,
    updatedAtMs: T0 - 30_000,
    repeat: null,
    occurrence: 1,
    maxLatenessMs: null,
    delivery: POLICY,
    attempt: 2,
    firedAtMs: T0 - 59_000,
    lastReason: "boom",
    createdVia: "api",
    ...fields,
  };
}

const retry = (timestampMs: number, correlationId: string | null = null): RetryTimerCommand => ({
  kind: "retry",
  tenantId: "acme",
  serviceCallId: "s",
  correlationId,
  timestampMs,
});

describe("RetryTimer (CONTRACT §14)", () => {
  it.each(["Failed", "TimedOut", "Missed"] as const)(
    "when a %s timer is retried, then it is Scheduled due at the command's timestamp, a new generation, attempts from the start",
    (state) => {
      const clock = new FakeClock(T0);
      const current = timer(state);

      const decision = decideCommand(current, retry(T0 - 5), clock.now());

      expect(decision.outcome).toBe("accepted");
      expect(decision.next).toMatchObject({
        state: "Scheduled",
        dueAtMs: T0 - 5,
        commandTs: T0 - 5,
        generation: 4,
        reachedAtMs: null,
        updatedAtMs: T0,
        data: '{"n":1}',
        correlationId: "c1",
        createdVia: "api",
        lastReason: "boom",
        delivery: POLICY,
      });
      expect(decision.next?.attempt).toBeUndefined();
      expect(decision.next?.firedAtMs).toBeUndefined();
    },
  );

  it.each(["Scheduled", "Reached", "Cancelled", "Fired", "Completed"] as const)(
    "when a %s timer is retried, then it is ignored and nothing is stored",
    (state) => {
      const decision = decideCommand(timer(state), retry(T0), T0);

      expect(decision).toEqual({ outcome: "ignored", previous: timer(state) });
    },
  );

  it("when an unknown key is retried, then it is ignored and no timer is created", () => {
    expect(decideCommand(undefined, retry(T0), T0)).toEqual({ outcome: "ignored", previous: undefined });
  });

  it("when the retry is older than or as old as the timer's last command, then it is ignored (a redelivery re-arms nothing)", () => {
    const current = timer("Failed", { commandTs: T0 });

    expect(decideCommand(current, retry(T0 - 1), T0).outcome).toBe("ignored");
    expect(decideCommand(current, retry(T0), T0).outcome).toBe("ignored");
    expect(decideCommand(current, retry(T0 + 1), T0).outcome).toBe("accepted");
  });

  it("when a prefix cancel not older than the retry covers the key, then the retry is ignored", () => {
    const current = timer("Failed");

    expect(decideCommand(current, retry(T0), T0, { prefixCancelTs: T0 }).outcome).toBe("ignored");
    expect(decideCommand(current, retry(T0), T0, { prefixCancelTs: T0 - 1 }).outcome).toBe("accepted");
  });

  it("when the retry carries a correlationId, then the retried version goes out with it", () => {
    expect(decideCommand(timer("Failed"), retry(T0, "op-7"), T0).next?.correlationId).toBe("op-7");
  });

  it("when a retried Missed timer with a lateness limit fires late, then it is published as reached, not missed again", () => {
    const clock = new FakeClock(T0);
    const next = decideCommand(timer("Missed", { maxLatenessMs: 0, delivery: null }), retry(T0 - 50), clock.now()).next!;
    clock.advance(1_000);

    const firing = decideFiring({ ...next, dueAtMs: next.dueAtMs! }, clock.now(), new CronerCalendar(), null);

    expect(firing.kind).toBe("reached");
    expect(firing.next.state).toBe("Reached");
  });

  it("when a retried tracked timer fires, then it is Fired at attempt 1 again", () => {
    const next = decideCommand(timer("TimedOut"), retry(T0), T0).next!;

    const firing = decideFiring({ ...next, dueAtMs: next.dueAtMs! }, T0 + 10, new CronerCalendar(), null);

    expect(firing.next).toMatchObject({ state: "Fired", tracking: { attempt: 1, firedAtMs: T0 + 10 } });
  });
});
