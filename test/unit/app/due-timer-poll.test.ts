import { dueTimerPollDeps } from "../../support/fakes/due-timer-poll-deps.js";
import { beforeEach, describe, expect, it } from "vitest";
import { MemoryTimerStore } from "../../../src/adapters/memory/memory-timer-store.js";
import { DueTimerPoll } from "../../../src/app/firing/due-timer-poll.js";
import type { TimerKey } from "../../../src/domain/timer.js";
import type { TimerCommand } from "../../../src/domain/timer-command.js";
import { FakeClock, T0 } from "../../support/fakes/fake-clock.js";
import { RecordingEventPublisher } from "../../support/fakes/recording-event-publisher.js";
import { RecordingLogger } from "../../support/fakes/recording-logger.js";
import { RecordingMetrics } from "../../support/fakes/recording-metrics.js";
import { DelegatingTimerStore } from "../../support/fakes/delegating-timer-store.js";
import type { Firing } from "../../../src/app/timer-store.js";

const key = (serviceCallId: string, tenantId = "acme"): TimerKey => ({ tenantId, serviceCallId });

describe("DueTimerPoll.poll", () => {
  let clock: FakeClock;
  let store: MemoryTimerStore;
  let publisher: RecordingEventPublisher;
  let metrics: RecordingMetrics;
  let logger: RecordingLogger;
  let commandTs: number;

  const workerDeps = (batchSize = 100) => dueTimerPollDeps({ store, publisher, clock, metrics, logger, batchSize });
  const worker = (batchSize = 100) => new DueTimerPoll(workerDeps(batchSize));

  async function apply(...commands: TimerCommand[]): Promise<void> {
    const decisions = await store.applyCommands(commands, { nowMs: clock.now() });
    for (const decision of decisions) {
      const before = decision.previous?.state === "Scheduled" ? 1 : 0;
      const after = (decision.next ?? decision.previous)?.state === "Scheduled" ? 1 : 0;
      metrics.addPending(after - before);
    }
    metrics.pendingDeltas.length = 0;
  }

  function schedule(serviceCallId: string, dueAtMs: number, fields: Partial<TimerCommand> = {}): TimerCommand {
    return {
      kind: "schedule",
      tenantId: "acme",
      serviceCallId,
      dueAtMs,
      data: null,
      correlationId: null,
      timestampMs: ++commandTs,
      ...fields,
    } as TimerCommand;
  }

  function cancel(serviceCallId: string): TimerCommand {
    return { kind: "cancel", tenantId: "acme", serviceCallId, correlationId: null, timestampMs: ++commandTs };
  }

  beforeEach(() => {
    clock = new FakeClock(T0);
    store = new MemoryTimerStore();
    publisher = new RecordingEventPublisher();
    metrics = new RecordingMetrics();
    logger = new RecordingLogger();
    commandTs = 0;
  });

  it("when timers are due at, before and after now, then only those with dueAt <= now fire", async () => {
    await apply(schedule("past", T0 - 60_000), schedule("now", T0), schedule("next-ms", T0 + 1), schedule("later", T0 + 60_000));

    const report = await worker().poll();

    expect(publisher.dueTimeReached.map((e) => e.serviceCallId)).toEqual(["past", "now"]);
    expect(report).toMatchObject({ found: 2, published: 2, failed: 0, marked: 2, full: false });
    expect((await store.get(key("next-ms")))?.state).toBe("Scheduled");
    expect((await store.get(key("later")))?.state).toBe("Scheduled");
  });

  it("when the clock reaches a timer's due time, then the next poll fires it", async () => {
    await apply(schedule("a", T0 + 1));
    await worker().poll();
    expect(publisher.dueTimeReached).toEqual([]);

    clock.advance(1);
    await worker().poll();

    expect(publisher.dueTimeReached.map((e) => e.serviceCallId)).toEqual(["a"]);
  });

  it("when several timers are due, then they are published oldest dueAt first", async () => {
    await apply(schedule("c", T0 - 10), schedule("a", T0 - 30), schedule("d", T0), schedule("b", T0 - 20));

    await worker().poll();

    expect(publisher.attempts.map((a) => a.event.serviceCallId)).toEqual(["a", "b", "c", "d"]);
  });

  it("when a timer fires, then it is marked Reached with reachedAt = now", async () => {
    await apply(schedule("a", T0 - 5_000));

    await worker().poll();

    expect(await store.get(key("a"))).toMatchObject({ state: "Reached", reachedAtMs: T0, dueAtMs: T0 - 5_000 });
  });

  it("when a timer fires, then the event carries the key, dueAt, reachedAt = now, data and correlationId", async () => {
    await apply(schedule("a", T0 - 1_000, { data: '{"order":42}', correlationId: "req-42" }));
    clock.advance(250);

    await worker().poll();

    expect(publisher.dueTimeReached).toEqual([
      {
        tenantId: "acme",
        serviceCallId: "a",
        dueAtMs: T0 - 1_000,
        reachedAtMs: T0 + 250,
        generation: 1,
        data: '{"order":42}',
        correlationId: "req-42",
      },
    ]);
  });

  it("when a timer has no data or correlationId, then the event carries null for them", async () => {
    await apply(schedule("a", T0));

    await worker().poll();

    expect(publisher.dueTimeReached[0]).toMatchObject({ data: null, correlationId: null });
  });

  it("when a timer has fired, then a later poll does not fire it again", async () => {
    await apply(schedule("a", T0));
    await worker().poll();
    clock.advance(10_000);

    const report = await worker().poll();

    expect(report.found).toBe(0);
    expect(publisher.dueTimeReached).toHaveLength(1);
  });

  it("when a timer was cancelled, then it never fires", async () => {
    await apply(schedule("a", T0 - 1), cancel("a"));

    await worker().poll();

    expect(publisher.dueTimeReached).toEqual([]);
  });

  it("when the query returns a full batch, then the report says full and only a batch is published", async () => {
    for (let i = 0; i < 5; i++) await apply(schedule(`t${i}`, T0 - 100 + i));

    const report = await worker(3).poll();

    expect(report).toMatchObject({ found: 3, published: 3, marked: 3, full: true });
    expect(publisher.dueTimeReached.map((e) => e.serviceCallId)).toEqual(["t0", "t1", "t2"]);
  });

  it("when fewer timers than the batch size are due, then the report is not full", async () => {
    await apply(schedule("a", T0), schedule("b", T0));

    expect((await worker(3).poll()).full).toBe(false);
  });

  it("when nothing is due, then the poll reports nothing and still completes", async () => {
    const report = await worker().poll();

    expect(report).toMatchObject({ found: 0, published: 0, failed: 0, marked: 0, full: false });
    expect(metrics.polls).toHaveLength(1);
    expect(metrics.fired).toEqual([]);
  });

  it("when a publish fails, then that timer stays Scheduled, the failure is counted and logged, and the others fire", async () => {
    await apply(schedule("ok", T0 - 2), schedule("broken", T0 - 1));
    publisher.failFor("broken");

    const report = await worker().poll();

    expect(report).toMatchObject({ found: 2, published: 1, failed: 1, marked: 1 });
    expect((await store.get(key("broken")))?.state).toBe("Scheduled");
    expect((await store.get(key("ok")))?.state).toBe("Reached");
    expect(metrics.publishFailures).toEqual([1]);
    expect(logger.at("warn")).toHaveLength(1);
  });

  it("when a failed publish succeeds on a later poll, then the timer fires then", async () => {
    await apply(schedule("a", T0));
    publisher.failNext(1);
    await worker().poll();
    publisher.recover();
    clock.advance(100);

    await worker().poll();

    expect(publisher.dueTimeReached).toEqual([expect.objectContaining({ serviceCallId: "a", reachedAtMs: T0 + 100 })]);
    expect((await store.get(key("a")))?.state).toBe("Reached");
  });

  it("when a reschedule lands between publish and mark, then the reschedule wins and the timer fires again at its new due time", async () => {
    await apply(schedule("a", T0 - 1));
    publisher.hold();
    const polling = worker().poll();
    await publisher.whenPending(1);

    await apply(schedule("a", T0 + 5_000, { data: '"v2"' }));
    publisher.release();
    const report = await polling;

    expect(report).toMatchObject({ published: 1, marked: 0 });
    expect(await store.get(key("a"))).toMatchObject({ state: "Scheduled", dueAtMs: T0 + 5_000, data: '"v2"' });
    expect(metrics.fired).toEqual([]);

    clock.advance(5_000);
    await worker().poll();

    expect(publisher.dueTimeReached.map((e) => [e.dueAtMs, e.data])).toEqual([
      [T0 - 1, null],
      [T0 + 5_000, '"v2"'],
    ]);
    expect((await store.get(key("a")))?.state).toBe("Reached");
  });

  it("when only the correlationId changes between publish and mark, then the timer is not marked", async () => {
    await apply(schedule("a", T0, { correlationId: "r1" }));
    publisher.hold();
    const polling = worker().poll();
    await publisher.whenPending(1);

    await apply(schedule("a", T0, { correlationId: "r2" }));
    publisher.release();

    expect((await polling).marked).toBe(0);
    expect(await store.get(key("a"))).toMatchObject({ state: "Scheduled", correlationId: "r2" });
  });

  it("when a cancel lands between publish and mark, then the cancel wins: the timer stays Cancelled", async () => {
    await apply(schedule("a", T0 - 1));
    publisher.hold();
    const polling = worker().poll();
    await publisher.whenPending(1);

    await apply(cancel("a"));
    publisher.release();
    const report = await polling;

    expect(report.marked).toBe(0);
    expect((await store.get(key("a")))?.state).toBe("Cancelled");
    expect(metrics.pendingDeltas).toEqual([]);
  });

  it("when timers fire, then timersFired gets each one's lag in seconds (reachedAt - dueAt)", async () => {
    await apply(schedule("a", T0 - 2_500), schedule("b", T0));

    await worker().poll();

    expect(metrics.fired).toEqual([[2.5, 0]]);
  });

  it("when some published timers are not marked, then only the marked ones' lags are reported and pending drops by marked only", async () => {
    await apply(schedule("a", T0 - 3_000), schedule("b", T0 - 1_000), schedule("c", T0 - 500));
    publisher.failFor("c");
    publisher.hold();
    const polling = worker().poll();
    await publisher.whenPending(3);
    await apply(schedule("a", T0 + 60_000));
    publisher.release();

    const report = await polling;

    expect(report).toMatchObject({ found: 3, published: 2, failed: 1, marked: 1 });
    expect(metrics.fired).toEqual([[1]]);
    expect(metrics.pendingDeltas).toEqual([-1]);
    expect(metrics.publishFailures).toEqual([1]);
  });

  it("when a poll completes, then pollCompleted gets a non-negative duration and the clock's time at the end", async () => {
    await apply(schedule("a", T0));

    await worker().poll();

    expect(metrics.polls).toEqual([{ durationSeconds: expect.any(Number), endedAtMs: T0 }]);
    expect(metrics.polls[0]!.durationSeconds).toBeGreaterThanOrEqual(0);
  });

  it("when a poll is started, then its read gives whether the batch was full and each tenant's position after its last timer", async () => {
    await apply(schedule("a", T0 - 2), schedule("b", T0 - 1), schedule("c", T0));

    const first = worker(2).startPoll();
    const read = await first.read;
    await first.done;

    expect(read).toEqual({ full: true, last: new Map([["acme", { dueAtMs: T0 - 1, serviceCallId: "b" }]]) });
  });

  it("when the next poll starts after the previous one's position, then it reads only the timers after it (keyset paging)", async () => {
    await apply(schedule("a", T0 - 2), schedule("b", T0 - 1), schedule("c", T0));
    const { read } = worker(2).startPoll();
    const { last } = await read;

    const rest = await worker(2).poll(last);

    expect(rest).toMatchObject({ found: 1, full: false });
    expect(publisher.dueTimeReached.map((e) => e.serviceCallId)).toEqual(["a", "b", "c"]);
  });

  it("when publishes are still awaiting their acks, then the read has already resolved (the next poll can start)", async () => {
    await apply(schedule("a", T0));
    publisher.hold();
    const poll = worker().startPoll();

    const read = await poll.read;
    let done = false;
    void poll.done.then(() => (done = true));
    await publisher.whenPending(1);

    expect(read.full).toBe(false);
    expect(done).toBe(false);
    publisher.release();
    expect((await poll.done).marked).toBe(1);
  });

  it("when the publishes are acked and the record is still being written, then `published` has resolved and `done` has not", async () => {
    await apply(schedule("a", T0));
    let releaseRecord!: () => void;
    const recording = new Promise<void>((resolve) => (releaseRecord = resolve));
    const held = new (class extends DelegatingTimerStore {
      override async recordFirings(firings: readonly Firing[], owner: string) {
        await recording;
        return this.inner.recordFirings(firings, owner);
      }
    })(store);
    const poll = new DueTimerPoll({ ...workerDeps(), store: held }).startPoll();
    let done = false;
    void poll.done.then(() => (done = true));

    await poll.published;

    expect(publisher.dueTimeReached.map((e) => e.serviceCallId)).toEqual(["a"]);
    expect(done).toBe(false);
    releaseRecord();
    expect((await poll.done).marked).toBe(1);
  });

  it("when nothing is read, then the read keeps the position it started after", async () => {
    const after = new Map([["acme", { dueAtMs: T0 - 5, serviceCallId: "z" }]]);

    expect(await worker().startPoll(after).read).toEqual({ full: false, last: after });
  });

  it("when the same serviceCallId is due under two tenants, then both fire, each with its tenant", async () => {
    await apply(schedule("x", T0, { tenantId: "t1" }), schedule("x", T0, { tenantId: "t2" }));

    await worker().poll();

    expect(publisher.dueTimeReached.map((e) => e.tenantId).sort()).toEqual(["t1", "t2"]);
  });

  it("when the store fails, then poll rejects and nothing is published", async () => {
    await apply(schedule("a", T0));
    await store.close();

    await expect(worker().poll()).rejects.toThrow();
    expect(publisher.attempts).toEqual([]);
  });
});
