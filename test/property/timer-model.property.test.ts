/**
 * Model-based test of CONTRACT §3 and §10: random command sequences (redeliveries, reordering, equal
 * and old timestamps, bare payloads; recurring timers with everyMs or a per-minute cron, bounded by
 * maxOccurrences and until; maxLatenessMs; CancelTimersByPrefix), clock moves, polls (some with a
 * publish failure, some with commands landing between publish and mark), steps of the prefix-cancel
 * sweep and restarts of the SQLite store, run through CommandDecoder + TimerCommandProcessor +
 * DueTimerPoll + PrefixCancelSweeper, and compared after every step with a small reference model
 * written here from the contract text (it uses neither decideCommand nor decideFiring; it applies a
 * prefix cancel to every matching timer at once, where the service sweeps in the background).
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
import { DueTimerPoll } from "../../src/app/firing/due-timer-poll.js";
import { PrefixCancelSweeper } from "../../src/app/commands/prefix-cancel-sweeper.js";
import type { Timer } from "../../src/domain/timer.js";
import type { DueTimeMissed, DueTimeReached } from "../../src/app/timer-event-publisher.js";
import type { CommandOutcome } from "../../src/app/timer-metrics.js";
import { FakeClock, T0 } from "../support/fakes/fake-clock.js";
import { RecordingEventPublisher } from "../support/fakes/recording-event-publisher.js";
import { silentLogger } from "../support/fakes/recording-logger.js";
import { RecordingMetrics } from "../support/fakes/recording-metrics.js";
import { CronerCalendar } from "../../src/adapters/cron/croner-calendar.js";
import { InProcessCatchUps } from "../support/fakes/in-process-catch-ups.js";

// ---------------------------------------------------------------------------------------------
// Generated steps

const TENANTS = ["t1", "t2"] as const;
const CALL_IDS = ["a1", "a2", "b1"] as const;
const PREFIXES = ["a", "a1", "b", "a2x"] as const;
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
  readonly repeat: RepeatSpec | null;
  readonly maxLatenessMs: number | null;
}

/** `repeat`: every `everyMs`, or the cron `* * * * *` (UTC); always bounded, so every series ends. */
interface RepeatSpec {
  readonly everyMs: number | null;
  readonly maxOccurrences: number;
  /** until = first occurrence + this, or no until. */
  readonly untilAfterMs: number | null;
}

interface CancelPrefixSpec {
  readonly kind: "cancelprefix";
  readonly tenant: string;
  readonly prefix: string;
  readonly ts: number;
  readonly bare: boolean;
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

type CommandSpec = ScheduleSpec | CancelSpec | CancelPrefixSpec;
/** A new command, or the redelivery of an earlier one (index modulo the history). */
type MessageSpec = { readonly command: CommandSpec } | { readonly redeliver: number };

type Step =
  | { readonly kind: "deliver"; readonly messages: readonly MessageSpec[] }
  | { readonly kind: "advance"; readonly ms: number }
  | { readonly kind: "poll"; readonly failFirstPublish: boolean }
  | { readonly kind: "pollWithCommandsBetweenPublishAndMark"; readonly messages: readonly MessageSpec[] }
  | { readonly kind: "sweep" }
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

const repeatArb: fc.Arbitrary<RepeatSpec | null> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(null) },
  {
    weight: 3,
    arbitrary: fc.record({
      everyMs: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(1_000, 1_500) }, { weight: 1, arbitrary: fc.constant(null) }),
      maxOccurrences: fc.integer({ min: 1, max: 4 }),
      untilAfterMs: fc.constantFrom(null, null, 0, 1_200, 2_500),
    }),
  },
);

const scheduleArb: fc.Arbitrary<CommandSpec> = fc.record({
  kind: fc.constant("schedule" as const),
  ...commonArb,
  slot: fc.integer({ min: 0, max: 12 }),
  data: fc.constantFrom(...DATA),
  offset: fc.boolean(),
  repeat: repeatArb,
  maxLatenessMs: fc.constantFrom(null, null, 0, 1_000, 2_500),
});

const cancelArb: fc.Arbitrary<CommandSpec> = fc.record({ kind: fc.constant("cancel" as const), ...commonArb });

const cancelPrefixArb: fc.Arbitrary<CommandSpec> = fc.record({
  kind: fc.constant("cancelprefix" as const),
  tenant: commonArb.tenant,
  prefix: fc.constantFrom(...PREFIXES),
  ts: commonArb.ts,
  bare: commonArb.bare,
  id: commonArb.id,
});

const messageArb: fc.Arbitrary<MessageSpec> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      command: fc.oneof(
        { weight: 6, arbitrary: scheduleArb },
        { weight: 3, arbitrary: cancelArb },
        { weight: 1, arbitrary: cancelPrefixArb },
      ),
    }),
  },
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
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("sweep" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("restart" as const) }) },
);

// ---------------------------------------------------------------------------------------------
// The reference model: CONTRACT §3 and §10, written out directly.

type State = "Scheduled" | "Reached" | "Cancelled" | "Missed";

/** A series: occurrence n is due at `firstMs + (n - 1) * stepMs`, while n ≤ max and it is not after `untilMs`. */
interface ModelSeries {
  readonly firstMs: number;
  readonly stepMs: number;
  readonly max: number;
  readonly untilMs: number | null;
  /** Echoed by the store (the everyMs or cron form of the rule). */
  readonly cron: boolean;
}

interface ModelTimer {
  state: State;
  dueAtMs: number | null;
  data: string | null;
  correlationId: string | null;
  commandTs: number;
  /** §10: 1 when created, +1 for each command that changes what fires (dueAt, data, correlationId, repeat) or re-arms the timer. */
  generation: number;
  reachedAtMs: number | null;
  series: ModelSeries | null;
  occurrence: number;
  maxLatenessMs: number | null;
}

interface ModelCommand {
  readonly kind: "schedule" | "cancel";
  readonly tenantId: string;
  readonly serviceCallId: string;
  readonly dueAtMs: number;
  readonly data: string | null;
  readonly correlationId: string | null;
  readonly timestampMs: number;
  readonly series: ModelSeries | null;
  readonly maxLatenessMs: number | null;
}

/** An event the model expects: `DueTimeReached` or `DueTimeMissed`. */
interface ModelEvent {
  readonly kind: "reached" | "missed";
  readonly tenantId: string;
  readonly serviceCallId: string;
  readonly dueAtMs: number;
  readonly generation: number;
  readonly data: string | null;
  readonly correlationId: string | null;
  readonly occurrence: number | null;
  readonly missedOccurrences: number;
}

const keyOf = (tenantId: string, serviceCallId: string) => `${tenantId}/${serviceCallId}`;
const sameSeries = (a: ModelSeries | null, b: ModelSeries | null) =>
  a === b ||
  (a !== null &&
    b !== null &&
    a.firstMs === b.firstMs &&
    a.stepMs === b.stepMs &&
    a.max === b.max &&
    a.untilMs === b.untilMs &&
    a.cron === b.cron);
const dueOf = (series: ModelSeries, n: number) => series.firstMs + (n - 1) * series.stepMs;
const exists = (series: ModelSeries, n: number) => n <= series.max && (series.untilMs === null || dueOf(series, n) <= series.untilMs);

class TimerModel {
  readonly timers = new Map<string, ModelTimer>();
  /** Newest prefix-cancel timestamp per tenant and prefix. */
  readonly prefixCancels = new Map<string, Map<string, number>>();

  /** The newest prefix cancel covering a key, or null. */
  prefixCancelFor(tenantId: string, serviceCallId: string): number | null {
    let newest: number | null = null;
    for (const [prefix, ts] of this.prefixCancels.get(tenantId) ?? []) {
      if (serviceCallId.startsWith(prefix) && (newest === null || ts > newest)) newest = ts;
    }
    return newest;
  }

  /** §10 CancelTimersByPrefix: recorded, and applied at once to every matching timer as a CancelTimer would be. */
  cancelPrefix(tenantId: string, prefix: string, timestampMs: number): CommandOutcome {
    const prefixes = this.prefixCancels.get(tenantId) ?? new Map<string, number>();
    this.prefixCancels.set(tenantId, prefixes);
    const known = prefixes.get(prefix);
    if (known !== undefined && known >= timestampMs) return "ignored";
    prefixes.set(prefix, timestampMs);
    for (const [key, timer] of this.timers) {
      const [tenant, serviceCallId] = key.split("/") as [string, string];
      if (tenant !== tenantId || !serviceCallId.startsWith(prefix)) continue;
      if (timer.state !== "Scheduled" && timer.state !== "Cancelled") continue;
      if (timestampMs < timer.commandTs) continue;
      timer.state = "Cancelled";
      timer.commandTs = timestampMs;
    }
    return "accepted";
  }

  /** Applies one command; "accepted" when it created or changed a timer, else "ignored". */
  apply(command: ModelCommand): CommandOutcome {
    const key = keyOf(command.tenantId, command.serviceCallId);
    const timer = this.timers.get(key);
    const final = (t: ModelTimer) => t.state === "Reached" || t.state === "Missed";
    if (command.kind === "schedule") {
      if (timer === undefined) {
        // A key a prefix cancel covers counts as cancelled at that time, though it was unknown.
        const covering = this.prefixCancelFor(command.tenantId, command.serviceCallId);
        if (covering !== null && command.timestampMs <= covering) return "ignored";
        this.timers.set(key, {
          state: "Scheduled",
          dueAtMs: command.dueAtMs,
          data: command.data,
          correlationId: command.correlationId,
          commandTs: command.timestampMs,
          generation: 1,
          reachedAtMs: null,
          series: command.series,
          occurrence: 1,
          maxLatenessMs: command.maxLatenessMs,
        });
        return "accepted";
      }
      // §3.4 Reached and Missed are final: a newer schedule is rejected as TIMER_FINAL (§17), a re-sent
      // or older one ignored; §3.2 older commands are ignored, and at an equal timestamp the cancel wins.
      if (final(timer)) return command.timestampMs > timer.commandTs ? "rejected" : "ignored";
      if (command.timestampMs < timer.commandTs) return "ignored";
      if (timer.state === "Cancelled" && command.timestampMs === timer.commandTs) return "ignored";
      const sameDue = timer.series === null ? timer.dueAtMs === command.dueAtMs : true;
      const changed =
        timer.state !== "Scheduled" ||
        !sameDue ||
        !sameSeries(timer.series, command.series) ||
        timer.data !== command.data ||
        timer.correlationId !== command.correlationId;
      const latenessChanged = timer.maxLatenessMs !== command.maxLatenessMs;
      timer.commandTs = command.timestampMs;
      timer.maxLatenessMs = command.maxLatenessMs;
      if (changed) {
        Object.assign(timer, {
          state: "Scheduled",
          dueAtMs: command.dueAtMs,
          data: command.data,
          correlationId: command.correlationId,
          generation: timer.generation + 1,
          reachedAtMs: null,
          series: command.series,
          occurrence: 1,
        });
      }
      return changed || latenessChanged ? "accepted" : "ignored";
    }
    if (timer === undefined) {
      const covering = this.prefixCancelFor(command.tenantId, command.serviceCallId);
      if (covering !== null && command.timestampMs <= covering) return "ignored";
      // §3.5: cancelling an unknown key records a Cancelled timer (a tombstone).
      this.timers.set(key, {
        state: "Cancelled",
        dueAtMs: null,
        data: null,
        correlationId: null,
        commandTs: command.timestampMs,
        generation: 1,
        reachedAtMs: null,
        series: null,
        occurrence: 1,
        maxLatenessMs: null,
      });
      return "accepted";
    }
    if (final(timer)) return "ignored";
    if (command.timestampMs < timer.commandTs) return "ignored";
    const changed = timer.state !== "Cancelled";
    timer.state = "Cancelled";
    timer.commandTs = command.timestampMs;
    return changed ? "accepted" : "ignored";
  }

  /**
   * The Scheduled timers due at `nowMs`, by tenant, each tenant's oldest first (then by
   * serviceCallId). Across tenants the service deals them round-robin (CONTRACT §12); the order of
   * tenants is not compared (see `byTenant`).
   */
  due(nowMs: number): (ModelTimer & { tenantId: string; serviceCallId: string })[] {
    return [...this.timers.entries()]
      .filter(([, t]) => t.state === "Scheduled" && t.dueAtMs !== null && t.dueAtMs <= nowMs)
      .map(([key, t]) => {
        const [tenantId, serviceCallId] = key.split("/") as [string, string];
        return { ...t, tenantId, serviceCallId };
      })
      .sort((x, y) => compare(x.tenantId, y.tenantId) || x.dueAtMs! - y.dueAtMs! || compare(x.serviceCallId, y.serviceCallId));
  }

  /**
   * §10: what firing a due timer (as read) at `nowMs` publishes, and what it then becomes: the latest
   * occurrence due by now stands for the earlier ones; too late → missed; no next occurrence → final.
   */
  fire(read: ModelTimer & { tenantId: string; serviceCallId: string }, nowMs: number): { event: ModelEvent; next: Partial<ModelTimer> } {
    let n = read.occurrence;
    const series = read.series;
    if (series !== null) while (exists(series, n + 1) && dueOf(series, n + 1) <= nowMs) n++;
    const dueAtMs = series === null ? read.dueAtMs! : dueOf(series, n);
    const kind = read.maxLatenessMs !== null && nowMs - dueAtMs > read.maxLatenessMs ? "missed" : "reached";
    const event: ModelEvent = {
      kind,
      tenantId: read.tenantId,
      serviceCallId: read.serviceCallId,
      dueAtMs,
      generation: read.generation,
      data: read.data,
      correlationId: read.correlationId,
      occurrence: series === null ? null : n,
      missedOccurrences: n - read.occurrence,
    };
    const next =
      series !== null && exists(series, n + 1)
        ? { state: "Scheduled" as const, dueAtMs: dueOf(series, n + 1), occurrence: n + 1, reachedAtMs: nowMs }
        : { state: kind === "missed" ? ("Missed" as const) : ("Reached" as const), dueAtMs, occurrence: n, reachedAtMs: nowMs };
    return { event, next };
  }

  /** §3.1: records a published firing unless the timer changed after it was read. */
  record(read: { tenantId: string; serviceCallId: string; dueAtMs: number | null; generation: number }, next: Partial<ModelTimer>): void {
    const timer = this.timers.get(keyOf(read.tenantId, read.serviceCallId));
    if (timer === undefined || timer.state !== "Scheduled") return;
    if (timer.dueAtMs !== read.dueAtMs || timer.generation !== read.generation) return;
    Object.assign(timer, next);
  }

  get scheduledCount(): number {
    return [...this.timers.values()].filter((t) => t.state === "Scheduled").length;
  }
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Events grouped by tenant, each tenant's in the order they were published. */
/**
 * The events without their trace context, which the model does not track (the trace tests do):
 * each must carry a trace-id; a command without `traceparent` starts a new, random one.
 */
function traced<E extends { readonly trace?: { readonly traceId: string } | null }>(events: readonly E[]): Omit<E, "trace">[] {
  return events.map(({ trace, ...event }) => {
    expect(trace?.traceId).toMatch(/^[0-9a-f]{32}$/);
    return event;
  });
}

function byTenant<E extends { readonly tenantId: string }>(events: readonly E[]): E[] {
  return [...events].sort((a, b) => compare(a.tenantId, b.tenantId));
}

interface Comparable {
  state: string;
  commandTs: number;
  generation: number;
  dueAtMs: number | null;
  data: string | null;
  correlationId: string | null;
  reachedAtMs: number | null;
  occurrence: number;
  maxLatenessMs: number | null;
  series: ModelSeries | null;
}

/** What the model knows of a timer: a Cancelled timer's old due time and data are not part of the contract. */
function comparable(t: Comparable) {
  if (t.state === "Cancelled") return { state: t.state, commandTs: t.commandTs, generation: t.generation };
  const { state, commandTs, generation, dueAtMs, data, correlationId, reachedAtMs, occurrence, maxLatenessMs, series } = t;
  return { state, commandTs, generation, dueAtMs, data, correlationId, reachedAtMs, occurrence, maxLatenessMs, series };
}

/** A stored timer as the model sees it: the series of its rule, and a prefix cancel not yet swept into it applied. */
function storedView(stored: Timer, prefixCancelTs: number | null): Comparable {
  const repeat = stored.repeat;
  const series: ModelSeries | null =
    repeat === null
      ? null
      : {
          firstMs: repeat.firstDueAtMs,
          stepMs: repeat.everyMs ?? 60_000,
          max: repeat.maxOccurrences ?? Infinity,
          untilMs: repeat.untilMs,
          cron: repeat.cron !== undefined,
        };
  const view: Comparable = { ...stored, series };
  const covered =
    prefixCancelTs !== null && (stored.state === "Scheduled" || stored.state === "Cancelled") && stored.commandTs <= prefixCancelTs;
  return covered ? { ...view, state: "Cancelled", commandTs: prefixCancelTs } : view;
}

// ---------------------------------------------------------------------------------------------
// The system under test

const dueAtOf = (spec: ScheduleSpec) => T0 + spec.slot * 500 - 1_000;

function formatDueAt(spec: ScheduleSpec): string {
  const ms = dueAtOf(spec);
  if (!spec.offset) return new Date(ms).toISOString();
  return new Date(ms + 3_600_000).toISOString().replace("Z", "+01:00");
}

/** The series a schedule's `repeat` asks for: occurrence 1 is dueAt (everyMs) or the next whole minute (cron). */
function seriesOf(spec: ScheduleSpec): ModelSeries | null {
  if (spec.repeat === null) return null;
  const dueAtMs = dueAtOf(spec);
  const firstMs = spec.repeat.everyMs === null ? Math.ceil(dueAtMs / 60_000) * 60_000 : dueAtMs;
  return {
    firstMs,
    stepMs: spec.repeat.everyMs ?? 60_000,
    max: spec.repeat.maxOccurrences,
    untilMs: spec.repeat.untilAfterMs === null ? null : firstMs + spec.repeat.untilAfterMs,
    cron: spec.repeat.everyMs === null,
  };
}

const TYPES = { schedule: "ScheduleTimer", cancel: "CancelTimer", cancelprefix: "CancelTimersByPrefix" } as const;

function toMessage(spec: CommandSpec, sourceId: string): DeliveredCommand {
  const subject = `timer.commands.${spec.kind}.${spec.tenant}`;
  const payload: Record<string, unknown> =
    spec.kind === "cancelprefix"
      ? { tenantId: spec.tenant, serviceCallIdPrefix: spec.prefix }
      : { tenantId: spec.tenant, serviceCallId: spec.callId };
  if (spec.kind === "schedule") {
    payload.dueAt = formatDueAt(spec);
    if (spec.data !== null) payload.data = JSON.parse(spec.data);
    const series = seriesOf(spec);
    if (spec.repeat !== null && series !== null) {
      payload.repeat = {
        ...(spec.repeat.everyMs === null ? { cron: "* * * * *" } : { everyMs: spec.repeat.everyMs }),
        maxOccurrences: spec.repeat.maxOccurrences,
        ...(series.untilMs === null ? {} : { until: new Date(series.untilMs).toISOString() }),
      };
    }
    if (spec.maxLatenessMs !== null) payload.maxLatenessMs = spec.maxLatenessMs;
  }
  const correlationId = spec.kind === "cancelprefix" ? null : spec.correlationId;
  const body = spec.bare
    ? payload
    : {
        id: spec.id,
        type: TYPES[spec.kind],
        tenantId: spec.tenant,
        ...(correlationId === null ? {} : { correlationId }),
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

function toModelCommand(spec: ScheduleSpec | CancelSpec): ModelCommand {
  const series = spec.kind === "schedule" ? seriesOf(spec) : null;
  return {
    kind: spec.kind,
    tenantId: spec.tenant,
    serviceCallId: spec.callId,
    dueAtMs: spec.kind === "schedule" ? (series?.firstMs ?? dueAtOf(spec)) : 0,
    data: spec.kind === "schedule" ? spec.data : null,
    // A bare payload has no envelope, hence no correlationId.
    correlationId: spec.bare ? null : spec.correlationId,
    timestampMs: spec.ts,
    series,
    maxLatenessMs: spec.kind === "schedule" ? spec.maxLatenessMs : null,
  };
}

class System {
  readonly clock = new FakeClock(T0);
  readonly publisher = new RecordingEventPublisher();
  readonly metrics = new RecordingMetrics();
  store!: SqliteTimerStore;
  processor!: TimerCommandProcessor;
  worker!: DueTimerPoll;
  sweeper!: PrefixCancelSweeper;
  restarts = 0;

  constructor(private readonly path: string) {}

  async open(): Promise<void> {
    const { clock, publisher, metrics } = this;
    this.store = await openSqliteTimerStore({ path: this.path, writerThread: false });
    const decoder = new CommandDecoder({
      subjectPrefix: "timer",
      maxHorizonDays: 30,
      maxClockSkewMs: 86_400_000,
      clock,
      calendar: new CronerCalendar(),
    });
    this.processor = new TimerCommandProcessor({
      decoder,
      store: this.store,
      publisher,
      clock,
      metrics,
      logger: silentLogger,
      onScheduled: () => {},
    });
    this.worker = new DueTimerPoll({
      store: this.store,
      publisher,
      clock,
      metrics,
      logger: silentLogger,
      batchSize: 100,
      owner: "model",
      claimTtlMs: 30_000,
      calendar: new CronerCalendar(),
      catchUps: new InProcessCatchUps(new CronerCalendar()),
    });
    // One timer per transaction: a sweep step leaves most prefix cancels half done.
    this.sweeper = new PrefixCancelSweeper({ store: this.store, clock, metrics, logger: silentLogger, batchSize: 1, idleCheckMs: 1_000 });
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

function reachedEvent(e: ModelEvent, reachedAtMs: number): DueTimeReached {
  const { tenantId, serviceCallId, dueAtMs, generation, data, correlationId, occurrence, missedOccurrences } = e;
  return {
    tenantId,
    serviceCallId,
    dueAtMs,
    reachedAtMs,
    generation,
    data,
    correlationId,
    ...(occurrence === null ? {} : { occurrence }),
    ...(missedOccurrences === 0 ? {} : { missedOccurrences }),
  };
}

function missedEvent(e: ModelEvent, missedAtMs: number): DueTimeMissed {
  const { tenantId, serviceCallId, dueAtMs, generation, data, correlationId, occurrence } = e;
  return { tenantId, serviceCallId, dueAtMs, missedAtMs, generation, data, correlationId, ...(occurrence === null ? {} : { occurrence }) };
}

/** Totals over all sequences, printed at the end. */
const totals = { sequences: 0, steps: 0, commands: 0, polls: 0, restarts: 0, events: 0, missed: 0, recurring: 0, prefixCancels: 0 };

async function runSequence(steps: readonly Step[]): Promise<void> {
  totals.sequences++;
  const folder = mkdtempSync(join(SCRATCH, "timer-model-"));
  const system = new System(join(folder, "timer.db"));
  const model = new TimerModel();
  const history: CommandSpec[] = [];
  let sourceIds = 0;
  /** reachedAtMs of every key the store has shown Reached or Missed: it must never change again. */
  const finalSeen = new Map<string, number>();

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
    totals.prefixCancels += specs.filter((spec) => spec.kind === "cancelprefix").length;
    totals.recurring += specs.filter((spec) => spec.kind === "schedule" && spec.repeat !== null).length;
    const handledBefore = system.metrics.handled.length;
    const rejectedBefore = system.publisher.commandRejected.length;
    const settlements = await system.processor.process(specs.map((spec) => toMessage(spec, `S:${++sourceIds}`)));
    const expectedOutcomes = specs.map((spec) =>
      spec.kind === "cancelprefix" ? model.cancelPrefix(spec.tenant, spec.prefix, spec.ts) : model.apply(toModelCommand(spec)),
    );

    // A TIMER_FINAL rejection is counted once its event is out, after the batch's other outcomes.
    expect(settlements.map((s) => s.kind)).toEqual(expectedOutcomes.map((o) => (o === "rejected" ? "term" : "ack")));
    const rejectedKeys = specs.flatMap((spec, i) =>
      expectedOutcomes[i] === "rejected" && spec.kind !== "cancelprefix" ? [spec.callId] : [],
    );
    const published = system.publisher.commandRejected.slice(rejectedBefore);
    expect(published.map((r) => r.code)).toEqual(rejectedKeys.map(() => "TIMER_FINAL"));
    expect(published.map((r) => r.serviceCallId).sort()).toEqual([...rejectedKeys].sort());
    const handled = system.metrics.handled.slice(handledBefore).map((h) => h.outcome);
    expect(handled.filter((o) => o !== "rejected")).toEqual(expectedOutcomes.filter((o) => o !== "rejected"));
    expect(handled.filter((o) => o === "rejected")).toHaveLength(rejectedKeys.length);
  }

  /** What the model expects of firing the timers due now: their events, and what they become. */
  function expectedFirings(now: number) {
    return model.due(now).map((read) => ({ read, ...model.fire(read, now) }));
  }

  function expectEvents(before: { reached: number; missed: number }, firings: ReturnType<typeof expectedFirings>, now: number): void {
    const { publisher } = system;
    expect({
      reached: byTenant(traced(publisher.dueTimeReached.slice(before.reached))),
      missed: byTenant(traced(publisher.dueTimeMissed.slice(before.missed))),
    }).toEqual({
      reached: firings.filter((f) => f.event.kind === "reached").map((f) => reachedEvent(f.event, now)),
      missed: firings.filter((f) => f.event.kind === "missed").map((f) => missedEvent(f.event, now)),
    });
  }

  const eventCounts = () => ({ reached: system.publisher.dueTimeReached.length, missed: system.publisher.dueTimeMissed.length });

  async function poll(failFirstPublish: boolean): Promise<void> {
    const now = system.clock.now();
    const firings = expectedFirings(now);
    const before = eventCounts();
    if (failFirstPublish) system.publisher.failNext(1, "any");
    const report = await system.worker.poll();
    system.publisher.recover();

    // The publish that failed is the first of the poll: the first timer of one of the tenants.
    const sent = new Set(
      [...system.publisher.dueTimeReached.slice(before.reached), ...system.publisher.dueTimeMissed.slice(before.missed)].map(
        (e) => `${e.tenantId}/${e.serviceCallId}/${e.dueAtMs}`,
      ),
    );
    const failed = failFirstPublish
      ? firings.filter((f) => !sent.has(`${f.event.tenantId}/${f.event.serviceCallId}/${f.event.dueAtMs}`))
      : [];
    if (failFirstPublish && firings.length > 0) {
      expect(failed).toHaveLength(1);
      expect(firings.find((f) => f.read.tenantId === failed[0]!.read.tenantId)).toBe(failed[0]);
    }
    const published = firings.filter((f) => !failed.includes(f));
    expect(report.published).toBe(published.length);
    expectEvents(before, published, now);
    for (const f of published) model.record(f.read, f.next);
  }

  async function pollWithCommandsBetweenPublishAndMark(messages: readonly MessageSpec[]): Promise<void> {
    const now = system.clock.now();
    const firings = expectedFirings(now);
    const before = eventCounts();
    system.publisher.hold();
    const polling = system.worker.poll();
    await system.publisher.whenPending(firings.length);
    // A TIMER_FINAL rejection among these commands is a publish too, held until the release.
    const delivering = deliver(messages);
    await Promise.race([delivering, system.publisher.whenPending(firings.length + 1)]);
    system.publisher.release();
    await delivering;
    await polling;

    expectEvents(before, firings, now);
    for (const f of firings) model.record(f.read, f.next);
  }

  /** Compares the store with the model in one snapshot, and checks the invariants on what was seen. */
  async function checkState(afterCleanPoll: boolean): Promise<void> {
    const now = system.clock.now();
    const actual: Record<string, unknown> = {};
    const expected: Record<string, unknown> = {};
    const violations: string[] = [];
    let storedScheduled = 0;
    const callIds = new Set<string>([...CALL_IDS, ...history.flatMap((spec) => (spec.kind === "cancelprefix" ? [] : [spec.callId]))]);
    for (const tenantId of TENANTS) {
      for (const serviceCallId of callIds) {
        const key = keyOf(tenantId, serviceCallId);
        const want = model.timers.get(key);
        const stored = await system.store.get({ tenantId, serviceCallId });
        actual[key] = stored === undefined ? undefined : comparable(storedView(stored, model.prefixCancelFor(tenantId, serviceCallId)));
        expected[key] = want === undefined ? undefined : comparable(want);
        if (stored === undefined) continue;
        if (stored.state === "Scheduled") storedScheduled++;
        if (stored.state === "Reached" || stored.state === "Missed") {
          // Reached and Missed are final: once seen, the same state and reachedAt forever.
          const first = finalSeen.get(key) ?? stored.reachedAtMs!;
          finalSeen.set(key, first);
          if (stored.reachedAtMs !== first) violations.push(`${key}: reachedAt moved from ${first} to ${stored.reachedAtMs}`);
        } else if (finalSeen.has(key)) {
          violations.push(`${key}: left its final state for ${stored.state}`);
        }
        // Every Scheduled timer whose due time has passed fires at the next (successful) poll.
        if (afterCleanPoll && stored.state === "Scheduled" && stored.dueAtMs! <= now) violations.push(`${key}: due but not fired`);
      }
    }
    // Never before dueAt; reachedAt (missedAt) is a time the clock showed.
    const times = [
      ...system.publisher.dueTimeReached.map((e) => ({ e, at: e.reachedAtMs })),
      ...system.publisher.dueTimeMissed.map((e) => ({ e, at: e.missedAtMs })),
    ];
    for (const { e, at } of times) {
      if (e.dueAtMs > at || at > now) violations.push(`event ${JSON.stringify(e)} fired early or in the future`);
    }
    // The gauge counts the Scheduled rows, including those a prefix cancel covers until the sweep reaches them.
    expect({ timers: actual, pending: system.metrics.pending, violations }).toEqual({
      timers: expected,
      pending: storedScheduled,
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
        case "sweep":
          await system.sweeper.sweepRound();
          break;
        case "restart":
          await system.restart();
          break;
      }
      await checkState(cleanPoll);
    }
    // At the end: after a restart, polls far in the future and a full sweep, every series has ended
    // and every Scheduled timer has fired.
    await system.restart();
    for (let minute = 0; minute < 6; minute++) {
      system.clock.advance(60_000);
      await poll(false);
    }
    await system.sweeper.sweepAll();
    await checkState(true);
    expect(model.scheduledCount).toBe(0);
    // Cancelled timers never fire after their cancel; a key fires again only after a new command.
    const firesPerKey = new Map<string, number>();
    for (const e of [...system.publisher.dueTimeReached, ...system.publisher.dueTimeMissed]) {
      const key = keyOf(e.tenantId, e.serviceCallId);
      firesPerKey.set(key, (firesPerKey.get(key) ?? 0) + 1);
    }
    for (const [key, timer] of model.timers) {
      if (timer.state === "Cancelled") continue;
      expect(firesPerKey.get(key) ?? 0, key).toBeGreaterThanOrEqual(1);
    }
  } finally {
    totals.events += system.publisher.dueTimeReached.length + system.publisher.dueTimeMissed.length;
    totals.missed += system.publisher.dueTimeMissed.length;
    await system.store?.close();
    rmSync(folder, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------

const seed = process.env.FC_SEED === undefined ? Date.now() % 2_147_483_647 : Number(process.env.FC_SEED);
const path = process.env.FC_PATH;
const NUM_RUNS = Number(process.env.FC_NUM_RUNS ?? 1_000);

describe("timer model (CONTRACT §3, §10) vs. TimerCommandProcessor + DueTimerPoll + PrefixCancelSweeper + SqliteTimerStore", () => {
  it(`when random commands, clock moves, polls and restarts are run (seed ${seed}), then the stored state and the events always match the model`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 40, size: "medium" }), async (steps) => {
        await runSequence(steps);
      }),
      { seed, path, numRuns: NUM_RUNS },
    );
    console.info(`model test: ${JSON.stringify(totals)}`);
  }, 240_000);

  it("when a schedule, its redelivery, an equal-timestamp cancel and a late stale schedule arrive, then the timer stays Cancelled and never fires", async () => {
    const schedule: CommandSpec = {
      kind: "schedule",
      tenant: "t1",
      callId: "a",
      slot: 0,
      data: null,
      correlationId: null,
      ts: 3,
      bare: false,
      offset: false,
      id: "m1",
      repeat: null,
      maxLatenessMs: null,
    };
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
    const first: CommandSpec = {
      kind: "schedule",
      tenant: "t2",
      callId: "b",
      slot: 0,
      data: '"x"',
      correlationId: "c1",
      ts: 1,
      bare: false,
      offset: true,
      id: "m1",
      repeat: null,
      maxLatenessMs: null,
    };
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
