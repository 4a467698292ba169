/**
 * Model-based test of CONTRACT §3: random command sequences (redeliveries, reordering, equal and old
 * timestamps, bare payloads), clock moves, polls (some with a publish failure, some with commands
 * landing between publish and mark) and restarts of the SQLite store, run through CommandDecoder +
 * TimerCommandProcessor + DueTimerWorker, and compared after every step with a small reference model
 * written here from the contract text (it does not use decideCommand).
 *
 * Reproduce a failure with FC_SEED=<seed printed by fast-check> (and FC_PATH=<path> to skip shrinking).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openSqliteTimerStore, type SqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import { CommandDecoder } from "../../src/app/commands/command-decoder.js";
import { TimerCommandProcessor, type DeliveredCommand } from "../../src/app/commands/timer-command-processor.js";
import { DueTimerWorker } from "../../src/app/firing/due-timer-worker.js";
import type { DueTimeReached } from "../../src/app/timer-event-publisher.js";
import type { CommandOutcome } from "../../src/app/timer-metrics.js";
import { FakeClock, T0 } from "../support/fakes/fake-clock.js";
import { RecordingEventPublisher } from "../support/fakes/recording-event-publisher.js";
import { silentLogger } from "../support/fakes/recording-logger.js";
import { RecordingMetrics } from "../support/fakes/recording-metrics.js";

// ---------------------------------------------------------------------------------------------
// Generated steps

const TENANTS = ["t1", "t2"] as const;
const CALL_IDS = ["a", "b", "c"] as const;
const DATA = [null, '{"v":1}', '"x"', "[1,2]"] as const;
const CORRELATIONS = [null, "c1", "c2"] as const;

interface ScheduleSpec {
  readonly kind: "schedule";
  readonly tenant: string;
  readonly callId: string;
  /** dueAt = T0 + slot * 500 ms - 1 s: from already overdue to a few seconds ahead. */
  readonly slot: number;
  readonly data: string | null;
  readonly correlationId: string | null;
  readonly ts: number;
  /** A bare payload (no envelope): its timestamp is then the broker's, set to `ts` here. */
  readonly bare: boolean;
  /** Writes dueAt with a +01:00 offset instead of Z. */
  readonly offset: boolean;
  readonly id: string;
}

interface CancelSpec {
  readonly kind: "cancel";
  readonly tenant: string;
  readonly callId: string;
  readonly correlationId: string | null;
  readonly ts: number;
  readonly bare: boolean;
  readonly id: string;
}

type CommandSpec = ScheduleSpec | CancelSpec;
/** A new command, or the redelivery of an earlier one (index modulo the history). */
type MessageSpec = { readonly command: CommandSpec } | { readonly redeliver: number };

type Step =
  | { readonly kind: "deliver"; readonly messages: readonly MessageSpec[] }
  | { readonly kind: "advance"; readonly ms: number }
  | { readonly kind: "poll"; readonly failFirstPublish: boolean }
  | { readonly kind: "pollWithCommandsBetweenPublishAndMark"; readonly messages: readonly MessageSpec[] }
  | { readonly kind: "restart" };

/** true about once in `n`. */
const sometimes = (n: number) => fc.integer({ min: 1, max: n }).map((i) => i === 1);

const commonArb = {
  tenant: fc.constantFrom(...TENANTS),
  callId: fc.constantFrom(...CALL_IDS),
  correlationId: fc.constantFrom(...CORRELATIONS),
  ts: fc.integer({ min: 1, max: 6 }),
  bare: sometimes(5),
  id: fc.constantFrom("m1", "m2", "m3", "m4"),
};

const scheduleArb: fc.Arbitrary<CommandSpec> = fc.record({
  kind: fc.constant("schedule" as const),
  ...commonArb,
  slot: fc.integer({ min: 0, max: 12 }),
  data: fc.constantFrom(...DATA),
  offset: fc.boolean(),
});

const cancelArb: fc.Arbitrary<CommandSpec> = fc.record({ kind: fc.constant("cancel" as const), ...commonArb });

const messageArb: fc.Arbitrary<MessageSpec> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ command: fc.oneof({ weight: 3, arbitrary: scheduleArb }, { weight: 2, arbitrary: cancelArb }) }) },
  { weight: 2, arbitrary: fc.record({ redeliver: fc.nat() }) },
);

const messagesArb = fc.array(messageArb, { minLength: 1, maxLength: 3 });

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("deliver" as const), messages: messagesArb }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 3_000 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("poll" as const), failFirstPublish: sometimes(4) }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("pollWithCommandsBetweenPublishAndMark" as const), messages: messagesArb }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("restart" as const) }) },
);

// ---------------------------------------------------------------------------------------------
// The reference model: CONTRACT §3, written out directly.

type State = "Scheduled" | "Reached" | "Cancelled";

interface ModelTimer {
  state: State;
  dueAtMs: number | null;
  data: string | null;
  correlationId: string | null;
  commandTs: number;
  /** §10: 1 when created, +1 for each command that changes what fires or re-arms the timer. */
  generation: number;
  reachedAtMs: number | null;
}

interface ModelCommand {
  readonly kind: "schedule" | "cancel";
  readonly tenantId: string;
  readonly serviceCallId: string;
  readonly dueAtMs: number;
  readonly data: string | null;
  readonly correlationId: string | null;
  readonly timestampMs: number;
}

const keyOf = (tenantId: string, serviceCallId: string) => `${tenantId}/${serviceCallId}`;

class TimerModel {
  readonly timers = new Map<string, ModelTimer>();

  /** Applies one command; "accepted" when it created or changed a timer, else "ignored". */
  apply(command: ModelCommand): CommandOutcome {
    const key = keyOf(command.tenantId, command.serviceCallId);
    const timer = this.timers.get(key);
    if (command.kind === "schedule") {
      if (timer === undefined) {
        this.timers.set(key, {
          state: "Scheduled",
          dueAtMs: command.dueAtMs,
          data: command.data,
          correlationId: command.correlationId,
          commandTs: command.timestampMs,
          generation: 1,
          reachedAtMs: null,
        });
        return "accepted";
      }
      // §3.4 Reached is final; §3.2 older commands are ignored, and at an equal timestamp the cancel wins.
      if (timer.state === "Reached") return "ignored";
      if (command.timestampMs < timer.commandTs) return "ignored";
      if (timer.state === "Cancelled" && command.timestampMs === timer.commandTs) return "ignored";
      const changed =
        timer.state !== "Scheduled" ||
        timer.dueAtMs !== command.dueAtMs ||
        timer.data !== command.data ||
        timer.correlationId !== command.correlationId;
      Object.assign(timer, {
        state: "Scheduled",
        dueAtMs: command.dueAtMs,
        data: command.data,
        correlationId: command.correlationId,
        commandTs: command.timestampMs,
        generation: changed ? timer.generation + 1 : timer.generation,
      });
      return changed ? "accepted" : "ignored";
    }
    if (timer === undefined) {
      // §3.5: cancelling an unknown key records a Cancelled timer (a tombstone).
      this.timers.set(key, { state: "Cancelled", dueAtMs: null, data: null, correlationId: null, commandTs: command.timestampMs, generation: 1, reachedAtMs: null });
      return "accepted";
    }
    if (timer.state === "Reached") return "ignored";
    if (command.timestampMs < timer.commandTs) return "ignored";
    const changed = timer.state !== "Cancelled";
    timer.state = "Cancelled";
    timer.commandTs = command.timestampMs;
    return changed ? "accepted" : "ignored";
  }

  /** The Scheduled timers due at `nowMs`, oldest first (ties by tenant, then serviceCallId). */
  due(nowMs: number): (ModelTimer & { tenantId: string; serviceCallId: string })[] {
    return [...this.timers.entries()]
      .filter(([, t]) => t.state === "Scheduled" && t.dueAtMs !== null && t.dueAtMs <= nowMs)
      .map(([key, t]) => {
        const [tenantId, serviceCallId] = key.split("/") as [string, string];
        return { ...t, tenantId, serviceCallId };
      })
      .sort((x, y) => x.dueAtMs! - y.dueAtMs! || compare(x.tenantId, y.tenantId) || compare(x.serviceCallId, y.serviceCallId));
  }

  /** §3.1: marks a published timer Reached unless it changed after it was read. */
  mark(read: { tenantId: string; serviceCallId: string; dueAtMs: number | null; generation: number }, nowMs: number): void {
    const timer = this.timers.get(keyOf(read.tenantId, read.serviceCallId));
    if (timer === undefined || timer.state !== "Scheduled") return;
    if (timer.dueAtMs !== read.dueAtMs || timer.generation !== read.generation) return;
    timer.state = "Reached";
    timer.reachedAtMs = nowMs;
  }

  get scheduledCount(): number {
    return [...this.timers.values()].filter((t) => t.state === "Scheduled").length;
  }
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** What the model knows of a timer: a Cancelled timer's old due time and data are not part of the contract. */
function comparable(t: { state: string; commandTs: number; generation: number; dueAtMs: number | null; data: string | null; correlationId: string | null; reachedAtMs: number | null }) {
  if (t.state === "Cancelled") return { state: t.state, commandTs: t.commandTs, generation: t.generation };
  return { state: t.state, commandTs: t.commandTs, generation: t.generation, dueAtMs: t.dueAtMs, data: t.data, correlationId: t.correlationId, reachedAtMs: t.reachedAtMs };
}

// ---------------------------------------------------------------------------------------------
// The system under test

const dueAtOf = (spec: ScheduleSpec) => T0 + spec.slot * 500 - 1_000;

function formatDueAt(spec: ScheduleSpec): string {
  const ms = dueAtOf(spec);
  if (!spec.offset) return new Date(ms).toISOString();
  return new Date(ms + 3_600_000).toISOString().replace("Z", "+01:00");
}

function toMessage(spec: CommandSpec, sourceId: string): DeliveredCommand {
  const subject = `timer.commands.${spec.kind}.${spec.tenant}`;
  const payload: Record<string, unknown> = { tenantId: spec.tenant, serviceCallId: spec.callId };
  if (spec.kind === "schedule") {
    payload.dueAt = formatDueAt(spec);
    if (spec.data !== null) payload.data = JSON.parse(spec.data);
  }
  const body = spec.bare
    ? payload
    : {
        id: spec.id,
        type: spec.kind === "schedule" ? "ScheduleTimer" : "CancelTimer",
        tenantId: spec.tenant,
        ...(spec.correlationId === null ? {} : { correlationId: spec.correlationId }),
        timestampMs: spec.ts,
        payload,
      };
  return {
    subject,
    body: new TextEncoder().encode(JSON.stringify(body)),
    brokerTimestampMs: spec.ts,
    sourceId,
    deliveryCount: 1,
  };
}

function toModelCommand(spec: CommandSpec): ModelCommand {
  return {
    kind: spec.kind,
    tenantId: spec.tenant,
    serviceCallId: spec.callId,
    dueAtMs: spec.kind === "schedule" ? dueAtOf(spec) : 0,
    data: spec.kind === "schedule" ? spec.data : null,
    // A bare payload has no envelope, hence no correlationId.
    correlationId: spec.bare ? null : spec.correlationId,
    timestampMs: spec.ts,
  };
}

class System {
  readonly clock = new FakeClock(T0);
  readonly publisher = new RecordingEventPublisher();
  readonly metrics = new RecordingMetrics();
  store!: SqliteTimerStore;
  processor!: TimerCommandProcessor;
  worker!: DueTimerWorker;
  restarts = 0;

  constructor(private readonly path: string) {}

  async open(): Promise<void> {
    const { clock, publisher, metrics } = this;
    this.store = openSqliteTimerStore({ path: this.path });
    const decoder = new CommandDecoder({ subjectPrefix: "timer", maxHorizonDays: 30, clock });
    this.processor = new TimerCommandProcessor({
      decoder,
      store: this.store,
      publisher,
      clock,
      metrics,
      logger: silentLogger,
      onScheduled: () => {},
    });
    this.worker = new DueTimerWorker({ store: this.store, publisher, clock, metrics, logger: silentLogger, batchSize: 100, owner: "model", claimTtlMs: 30_000 });
    metrics.setPending(await this.store.countScheduled());
  }

  async restart(): Promise<void> {
    await this.store.close();
    this.restarts++;
    await this.open();
  }
}

// ---------------------------------------------------------------------------------------------
// Running one sequence

// A RAM disk when there is one: the database is reopened thousands of times and fsync dominates.
const SCRATCH = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();

const eventOf = (t: { tenantId: string; serviceCallId: string; dueAtMs: number | null; generation: number; data: string | null; correlationId: string | null }, reachedAtMs: number): DueTimeReached => ({
  tenantId: t.tenantId,
  serviceCallId: t.serviceCallId,
  dueAtMs: t.dueAtMs!,
  reachedAtMs,
  generation: t.generation,
  data: t.data,
  correlationId: t.correlationId,
});

/** Totals over all sequences, printed at the end. */
const totals = { sequences: 0, steps: 0, commands: 0, polls: 0, restarts: 0, events: 0 };

async function runSequence(steps: readonly Step[]): Promise<void> {
  totals.sequences++;
  const folder = mkdtempSync(join(SCRATCH, "timer-model-"));
  const system = new System(join(folder, "timer.db"));
  const model = new TimerModel();
  const history: CommandSpec[] = [];
  let sourceIds = 0;
  /** reachedAtMs of every key the store has shown Reached: it must never change again. */
  const reachedSeen = new Map<string, number>();

  const resolve = (message: MessageSpec): CommandSpec | undefined => {
    if ("command" in message) {
      history.push(message.command);
      return message.command;
    }
    return history.length === 0 ? undefined : history[message.redeliver % history.length];
  };

  async function deliver(messages: readonly MessageSpec[]): Promise<void> {
    const specs = messages.map(resolve).filter((s): s is CommandSpec => s !== undefined);
    if (specs.length === 0) return;
    totals.commands += specs.length;
    const handledBefore = system.metrics.handled.length;
    const settlements = await system.processor.process(specs.map((spec) => toMessage(spec, `S:${++sourceIds}`)));
    const expectedOutcomes = specs.map((spec) => model.apply(toModelCommand(spec)));

    expect(settlements.map((s) => s.kind)).toEqual(specs.map(() => "ack"));
    expect(system.publisher.commandRejected).toEqual([]);
    expect(system.metrics.handled.slice(handledBefore).map((h) => h.outcome)).toEqual(expectedOutcomes);
  }

  async function poll(failFirstPublish: boolean): Promise<void> {
    const now = system.clock.now();
    const due = model.due(now);
    const firedBefore = system.publisher.dueTimeReached.length;
    if (failFirstPublish) system.publisher.failNext(1, "due");
    const report = await system.worker.poll();
    system.publisher.recover();

    const fires = failFirstPublish ? due.slice(1) : due;
    expect(report.found).toBe(due.length);
    expect(system.publisher.dueTimeReached.slice(firedBefore)).toEqual(fires.map((t) => eventOf(t, now)));
    for (const t of fires) model.mark(t, now);
  }

  async function pollWithCommandsBetweenPublishAndMark(messages: readonly MessageSpec[]): Promise<void> {
    const now = system.clock.now();
    const read = model.due(now);
    const firedBefore = system.publisher.dueTimeReached.length;
    system.publisher.hold();
    const polling = system.worker.poll();
    await system.publisher.whenPending(read.length);
    await deliver(messages);
    system.publisher.release();
    await polling;

    expect(system.publisher.dueTimeReached.slice(firedBefore)).toEqual(read.map((t) => eventOf(t, now)));
    for (const t of read) model.mark(t, now);
  }

  /** Compares the store with the model in one snapshot, and checks the invariants on what was seen. */
  async function checkState(afterCleanPoll: boolean): Promise<void> {
    const now = system.clock.now();
    const actual: Record<string, unknown> = {};
    const expected: Record<string, unknown> = {};
    const violations: string[] = [];
    for (const tenantId of TENANTS) {
      for (const serviceCallId of CALL_IDS) {
        const key = keyOf(tenantId, serviceCallId);
        const want = model.timers.get(key);
        const stored = await system.store.get({ tenantId, serviceCallId });
        actual[key] = stored === undefined ? undefined : comparable(stored);
        expected[key] = want === undefined ? undefined : comparable(want);
        if (stored === undefined) continue;
        if (stored.state === "Reached") {
          // Reached is final: once seen, the same reachedAt forever.
          const first = reachedSeen.get(key) ?? stored.reachedAtMs!;
          reachedSeen.set(key, first);
          if (stored.reachedAtMs !== first) violations.push(`${key}: reachedAt moved from ${first} to ${stored.reachedAtMs}`);
        } else if (reachedSeen.has(key)) {
          violations.push(`${key}: left Reached for ${stored.state}`);
        }
        // Every Scheduled timer whose due time has passed fires at the next (successful) poll.
        if (afterCleanPoll && stored.state === "Scheduled" && stored.dueAtMs! <= now) violations.push(`${key}: due but not fired`);
      }
    }
    // Never before dueAt; reachedAt is a time the clock showed.
    for (const e of system.publisher.dueTimeReached) {
      if (e.dueAtMs > e.reachedAtMs || e.reachedAtMs > now) violations.push(`event ${JSON.stringify(e)} fired early or in the future`);
    }
    expect({ timers: actual, pending: system.metrics.pending, violations }).toEqual({
      timers: expected,
      pending: model.scheduledCount,
      violations: [],
    });
  }

  try {
    await system.open();
    for (const step of steps) {
      totals.steps++;
      if (step.kind === "poll" || step.kind === "pollWithCommandsBetweenPublishAndMark") totals.polls++;
      if (step.kind === "restart") totals.restarts++;
      let cleanPoll = false;
      switch (step.kind) {
        case "deliver":
          await deliver(step.messages);
          break;
        case "advance":
          system.clock.advance(step.ms);
          break;
        case "poll":
          await poll(step.failFirstPublish);
          cleanPoll = !step.failFirstPublish;
          break;
        case "pollWithCommandsBetweenPublishAndMark":
          await pollWithCommandsBetweenPublishAndMark(step.messages);
          break;
        case "restart":
          await system.restart();
          break;
      }
      await checkState(cleanPoll);
    }
    // At the end: after a restart and a poll far in the future, every Scheduled timer fires exactly once.
    await system.restart();
    system.clock.advance(60_000);
    await poll(false);
    await checkState(true);
    expect(model.scheduledCount).toBe(0);
    // Cancelled timers never fire after their cancel; a key fires again only after a new command.
    const firesPerKey = new Map<string, number>();
    for (const e of system.publisher.dueTimeReached) {
      const key = keyOf(e.tenantId, e.serviceCallId);
      firesPerKey.set(key, (firesPerKey.get(key) ?? 0) + 1);
    }
    for (const [key, timer] of model.timers) {
      if (timer.state === "Cancelled") continue;
      expect(firesPerKey.get(key) ?? 0, key).toBeGreaterThanOrEqual(1);
    }
  } finally {
    totals.events += system.publisher.dueTimeReached.length;
    await system.store?.close();
    rmSync(folder, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------

const seed = process.env.FC_SEED === undefined ? Date.now() % 2_147_483_647 : Number(process.env.FC_SEED);
const path = process.env.FC_PATH;
const NUM_RUNS = Number(process.env.FC_NUM_RUNS ?? 1_500);

describe("timer model (CONTRACT §3) vs. TimerCommandProcessor + DueTimerWorker + SqliteTimerStore", () => {
  it(`when random commands, clock moves, polls and restarts are run (seed ${seed}), then the stored state and the events always match the model`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 40, size: "medium" }), async (steps) => {
        await runSequence(steps);
      }),
      { seed, path, numRuns: NUM_RUNS },
    );
    console.info(`model test: ${JSON.stringify(totals)}`);
  }, 120_000);

  it("when a schedule, its redelivery, an equal-timestamp cancel and a late stale schedule arrive, then the timer stays Cancelled and never fires", async () => {
    const schedule: CommandSpec = { kind: "schedule", tenant: "t1", callId: "a", slot: 0, data: null, correlationId: null, ts: 3, bare: false, offset: false, id: "m1" };
    const cancel: CommandSpec = { kind: "cancel", tenant: "t1", callId: "a", correlationId: null, ts: 3, bare: false, id: "m2" };
    const stale: CommandSpec = { ...schedule, ts: 2, slot: 5, id: "m3" };
    await runSequence([
      { kind: "deliver", messages: [{ command: schedule }, { redeliver: 0 }] },
      { kind: "deliver", messages: [{ command: cancel }] },
      { kind: "restart" },
      { kind: "deliver", messages: [{ command: stale }, { redeliver: 0 }] },
      { kind: "advance", ms: 10_000 },
      { kind: "poll", failFirstPublish: false },
    ]);
  });

  it("when a reschedule lands between publish and mark, then the timer fires again as rescheduled (and the model agrees)", async () => {
    const first: CommandSpec = { kind: "schedule", tenant: "t2", callId: "b", slot: 0, data: '"x"', correlationId: "c1", ts: 1, bare: false, offset: true, id: "m1" };
    const moved: CommandSpec = { ...first, slot: 6, ts: 2, id: "m2" };
    await runSequence([
      { kind: "deliver", messages: [{ command: first }] },
      { kind: "pollWithCommandsBetweenPublishAndMark", messages: [{ command: moved }] },
      { kind: "restart" },
      { kind: "advance", ms: 2_000 },
      { kind: "poll", failFirstPublish: false },
    ]);
  });
});
