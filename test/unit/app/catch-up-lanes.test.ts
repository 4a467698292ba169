/**
 * Long catch-ups off the firing path (CONTRACT §10, §12): a recurring timer whose catch-up takes
 * more than a poll's budget goes to its tenant's lane and is decided by the catch-up calculator,
 * while the poll fires every other tenant's timers; the tenant's later due timers fire after it, in
 * the tenant's order. The calculator is held by hand, so nothing here waits on time.
 */
import { dueTimerPollDeps } from "../../support/fakes/due-timer-poll-deps.js";
import { beforeEach, describe, expect, it } from "vitest";
import { MemoryTimerStore } from "../../../src/adapters/memory/memory-timer-store.js";
import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";
import { DueTimerPoll } from "../../../src/app/firing/due-timer-poll.js";
import type { CatchUpCalculator } from "../../../src/app/firing/catch-up-calculator.js";
import { InProcessCatchUps } from "../../support/fakes/in-process-catch-ups.js";
import { firstOccurrenceAt, type Recurrence } from "../../../src/domain/recurrence.js";
import type { FiringDecision, FiringTimer } from "../../../src/domain/firing-rules.js";
import type { TimerCommand } from "../../../src/domain/timer-command.js";
import { FakeClock, T0 } from "../../support/fakes/fake-clock.js";
import { RecordingEventPublisher } from "../../support/fakes/recording-event-publisher.js";
import { RecordingLogger } from "../../support/fakes/recording-logger.js";
import { RecordingMetrics } from "../../support/fakes/recording-metrics.js";

const calendar = new CronerCalendar();

/** Decides as the service does, but only when the test lets each decision go. */
class HeldCatchUps implements CatchUpCalculator {
  readonly requests: string[] = [];
  readonly #inner = new InProcessCatchUps(calendar);
  readonly #held: (() => void)[] = [];
  #arrived: (() => void) | undefined;

  async decide(timer: FiringTimer, nowMs: number, prefixCancelTs: number | null): Promise<FiringDecision> {
    this.requests.push(`${timer.tenantId}/${timer.serviceCallId}`);
    this.#arrived?.();
    await new Promise<void>((resolve) => this.#held.push(resolve));
    return this.#inner.decide(timer, nowMs, prefixCancelTs);
  }

  /** Resolves once `count` decisions have been asked for. */
  async requested(count: number): Promise<void> {
    while (this.requests.length < count) await new Promise<void>((resolve) => (this.#arrived = resolve));
  }

  releaseAll(): void {
    for (const release of this.#held.splice(0)) release();
  }

  async close(): Promise<void> {}
}

/** A weekly cron in a zone with DST, due since year 1: about a thousand steps to catch up. */
function santiagoFromYear1(): Recurrence {
  const rule = { cron: "30 2 * * 0", timezone: "America/Santiago", untilMs: null, maxOccurrences: null };
  return { ...rule, firstDueAtMs: firstOccurrenceAt(rule, Date.parse("0001-01-01T00:00:00Z"), calendar)! };
}

describe("catch-up lanes", () => {
  let clock: FakeClock;
  let store: MemoryTimerStore;
  let publisher: RecordingEventPublisher;
  let catchUps: HeldCatchUps;
  let drained: number;
  let commandTs: number;
  let worker: DueTimerPoll;

  beforeEach(() => {
    clock = new FakeClock(T0);
    store = new MemoryTimerStore();
    publisher = new RecordingEventPublisher();
    catchUps = new HeldCatchUps();
    drained = 0;
    commandTs = 0;
    worker = new DueTimerPoll(
      dueTimerPollDeps({
        store,
        publisher,
        clock,
        metrics: new RecordingMetrics(),
        logger: new RecordingLogger(),
        calendar,
        catchUps,
        onCatchUpsDone: () => drained++,
      }),
    );
  });

  async function apply(...commands: TimerCommand[]): Promise<void> {
    await store.applyCommands(commands, { nowMs: clock.now() });
  }

  function schedule(tenantId: string, serviceCallId: string, dueAtMs: number, repeat: Recurrence | null = null): TimerCommand {
    return { kind: "schedule", tenantId, serviceCallId, dueAtMs, data: null, correlationId: null, timestampMs: ++commandTs, repeat };
  }

  const published = () => publisher.dueTimeReached.map((e) => `${e.tenantId}/${e.serviceCallId}`);

  async function untilDrained(count = 1): Promise<void> {
    while (drained < count) await new Promise((resolve) => setImmediate(resolve));
  }

  it("when a tenant's recurring timer needs a long catch-up, then the poll fires the other tenants at once and the tenant's timers fire after the catch-up, oldest first", async () => {
    const cron = santiagoFromYear1();
    await apply(
      schedule("a", "cron", cron.firstDueAtMs, cron),
      schedule("a", "later", T0 - 1_000),
      schedule("b", "one", T0 - 500),
      schedule("b", "two", T0),
    );

    const report = await worker.poll();

    expect(published()).toEqual(["b/one", "b/two"]);
    expect(report).toMatchObject({ found: 4, published: 2 });
    await catchUps.requested(1);
    expect(catchUps.requests).toEqual(["a/cron"]);
    expect(worker.catchUpsInProgress).toBe(2);

    catchUps.releaseAll();
    await untilDrained();

    expect(published()).toEqual(["b/one", "b/two", "a/cron", "a/later"]);
    const caughtUp = publisher.dueTimeReached[2]!;
    expect(caughtUp).toMatchObject({ missedOccurrencesCapped: true });
    expect(caughtUp.missedOccurrences).toBeGreaterThan(1_000);
    expect(worker.catchUpsInProgress).toBe(0);
    const stored = await store.get({ tenantId: "a", serviceCallId: "cron" });
    expect(stored).toMatchObject({ state: "Scheduled", occurrence: caughtUp.occurrence! + 1 });
    expect(stored!.dueAtMs).toBeGreaterThan(T0);
  });

  it("when a tenant's lane is full, then polls take nothing more of that tenant until it drains, and the rest fire then", async () => {
    const cron = santiagoFromYear1();
    const more = Array.from({ length: 150 }, (_, i) => schedule("a", `one-shot-${String(i).padStart(3, "0")}`, T0 - 10_000 + i));
    await apply(schedule("a", "cron", cron.firstDueAtMs, cron), ...more, schedule("b", "one", T0));

    let report = await worker.poll();
    while (report.full) report = await worker.poll(); // a chain, as the loop runs it
    const again = await worker.poll();

    expect(published()).toEqual(["b/one"]);
    expect(worker.catchUpsInProgress).toBe(100);
    expect(again.found, "nothing of the full lane's tenant is taken again").toBe(0);

    catchUps.releaseAll();
    await untilDrained();
    expect(published()).toHaveLength(1 + 100);
    expect(published().slice(1, 4)).toEqual(["a/cron", "a/one-shot-000", "a/one-shot-001"]);

    await worker.poll();
    expect(published()).toHaveLength(1 + 151);
    expect(published().at(-1)).toBe("a/one-shot-149");
  });

  it("when the catch-ups are stopped, then stop resolves once the group in hand is fired", async () => {
    const cron = santiagoFromYear1();
    await apply(schedule("a", "cron", cron.firstDueAtMs, cron), schedule("a", "later", T0 - 1_000));
    await worker.poll();
    await catchUps.requested(1);

    const stopped = worker.stopCatchUps();
    catchUps.releaseAll();
    await stopped;

    expect(published()).toEqual(["a/cron", "a/later"]);
    expect(worker.catchUpsInProgress).toBe(0);
  });
});
