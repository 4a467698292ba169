/**
 * Model-based test of CONTRACT §11 (completion tracking): random ScheduleTimers with `delivery`,
 * TimerCompleted / TimerFailed reports (old, equal and new timestamps, redeliveries), RetryTimer
 * (CONTRACT §14) of any state, clock moves,
 * due polls, deadline polls and restarts of the SQLite store, run through CommandDecoder +
 * TimerCommandProcessor + DueTimerPoll + DeliveryDeadlinePoll, and compared after every step
 * with a reference model written here from the contract text (it uses no domain code).
 *
 * Reproduce a failure with FC_SEED=<seed printed by fast-check>.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CronerCalendar } from "../../src/adapters/cron/croner-calendar.js";
import { InProcessCatchUps } from "../support/fakes/in-process-catch-ups.js";
import { openSqliteTimerStore, type SqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import { CommandDecoder } from "../../src/app/commands/command-decoder.js";
import { TimerCommandProcessor } from "../../src/app/commands/timer-command-processor.js";
import { DeliveryDeadlinePoll } from "../../src/app/firing/delivery-deadline-poll.js";
import { DueTimerPoll } from "../../src/app/firing/due-timer-poll.js";
import { FakeClock, T0 } from "../support/fakes/fake-clock.js";
import { rawCommand } from "../support/fakes/command-messages.js";
import { RecordingEventPublisher } from "../support/fakes/recording-event-publisher.js";
import { silentLogger } from "../support/fakes/recording-logger.js";
import { RecordingMetrics } from "../support/fakes/recording-metrics.js";

const KEYS = ["k1", "k2", "k3"] as const;

interface Policy {
  readonly maxRetries: number;
  readonly backoffMs: number;
  readonly completionTimeoutMs: number;
}

type Step =
  | { kind: "schedule"; key: string; slot: number; ts: number; policy: Policy | null; lateness: number | null }
  | { kind: "complete"; key: string; ts: number; result: string | null }
  | { kind: "fail"; key: string; ts: number; reason: string }
  | { kind: "retry"; key: string; ts: number }
  | { kind: "advance"; ms: number }
  | { kind: "pollDue" }
  | { kind: "pollDeadlines" }
  | { kind: "restart" };

const policyArb: fc.Arbitrary<Policy | null> = fc.option(
  fc.record({
    maxRetries: fc.integer({ min: 0, max: 2 }),
    backoffMs: fc.constantFrom(100, 700),
    completionTimeoutMs: fc.constantFrom(1_000, 2_500),
  }),
  { freq: 4 },
);
const keyArb = fc.constantFrom(...KEYS);
const tsArb = fc.integer({ min: 1, max: 12 });

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("schedule" as const),
      key: keyArb,
      slot: fc.integer({ min: 0, max: 6 }),
      ts: tsArb,
      policy: policyArb,
      // maxLatenessMs: late polls make such a timer Missed (CONTRACT §10), which RetryTimer re-arms.
      lateness: fc.option(fc.constantFrom(0, 0, 1_000), { freq: 2 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant("complete" as const), key: keyArb, ts: tsArb, result: fc.constantFrom(null, "ok") }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("fail" as const), key: keyArb, ts: tsArb, reason: fc.constantFrom("e1", "e2") }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("retry" as const), key: keyArb, ts: tsArb }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 3_000 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("pollDue" as const) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("pollDeadlines" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("restart" as const) }) },
);

// ---------------------------------------------------------------------------------------------
// The reference model of §3 (schedule) and §11, written out directly.

interface ModelTimer {
  state: "Scheduled" | "Reached" | "Fired" | "Completed" | "Failed" | "TimedOut" | "Missed";
  dueAtMs: number;
  policy: Policy | null;
  lateness: number | null;
  commandTs: number;
  /** Publishes so far. */
  attempt: number;
  /** A publish awaits its report (else a retry waits for its time). */
  awaitingReport: boolean;
  /** Completion time-out of the publish awaiting its report, or the time of the waiting retry. */
  nextLookMs: number | null;
  firedAtMs: number | null;
  completedAtMs: number | null;
  result: string | null;
  lastReason: string | null;
}

class Model {
  readonly timers = new Map<string, ModelTimer>();
  /** Every publish: key and attempt (0 for an untracked timer). */
  readonly published: string[] = [];

  schedule(key: string, dueAtMs: number, ts: number, policy: Policy | null, lateness: number | null): void {
    const timer = this.timers.get(key);
    if (timer === undefined) {
      this.timers.set(key, {
        state: "Scheduled",
        dueAtMs,
        policy,
        lateness,
        commandTs: ts,
        attempt: 0,
        awaitingReport: false,
        nextLookMs: null,
        firedAtMs: null,
        completedAtMs: null,
        result: null,
        lastReason: null,
      });
      return;
    }
    if (timer.state !== "Scheduled" || ts < timer.commandTs) return;
    Object.assign(timer, { dueAtMs, policy, lateness, commandTs: ts });
  }

  /** §11: a failure of the publish awaiting its report: retry after backoff × 2^(attempt−1), or final. */
  private failure(timer: ModelTimer, reason: string, nowMs: number): void {
    timer.lastReason = reason;
    if (timer.attempt <= timer.policy!.maxRetries) {
      timer.awaitingReport = false;
      timer.nextLookMs = nowMs + timer.policy!.backoffMs * 2 ** (timer.attempt - 1);
    } else {
      timer.state = reason === "timeout" ? "TimedOut" : "Failed";
      timer.nextLookMs = null;
    }
  }

  complete(key: string, ts: number, result: string | null, nowMs: number): void {
    const timer = this.timers.get(key);
    if (timer?.state !== "Fired" || ts < timer.commandTs) return;
    Object.assign(timer, { state: "Completed", commandTs: ts, completedAtMs: nowMs, result, nextLookMs: null });
  }

  fail(key: string, ts: number, reason: string, nowMs: number): void {
    const timer = this.timers.get(key);
    // Only a report newer than the last command counts, and only for a publish awaiting its report.
    if (timer?.state !== "Fired" || ts <= timer.commandTs || !timer.awaitingReport) return;
    timer.commandTs = ts;
    this.failure(timer, reason, nowMs);
  }

  /**
   * §14: Failed, TimedOut or Missed, and newer than the last command: due at its timestamp (so at
   * once), attempts from 1, and (docs/design/messages.md §14) whatever its lateness.
   */
  retry(key: string, ts: number): void {
    const timer = this.timers.get(key);
    if (timer === undefined || !["Failed", "TimedOut", "Missed"].includes(timer.state) || ts <= timer.commandTs) return;
    Object.assign(timer, {
      state: "Scheduled",
      dueAtMs: ts,
      lateness: null,
      commandTs: ts,
      attempt: 0,
      awaitingReport: false,
      nextLookMs: null,
      firedAtMs: null,
      completedAtMs: null,
      result: null,
    });
  }

  pollDue(nowMs: number): void {
    for (const [key, timer] of this.timers) {
      if (timer.state !== "Scheduled" || timer.dueAtMs > nowMs) continue;
      if (timer.lateness !== null && nowMs - timer.dueAtMs > timer.lateness) {
        // Published as DueTimeMissed instead; a one-shot timer ends Missed.
        timer.state = "Missed";
        continue;
      }
      if (timer.policy === null) {
        timer.state = "Reached";
        this.published.push(`${key}#0`);
        continue;
      }
      Object.assign(timer, {
        state: "Fired",
        attempt: 1,
        awaitingReport: true,
        firedAtMs: nowMs,
        nextLookMs: nowMs + timer.policy.completionTimeoutMs,
      });
      this.published.push(`${key}#1`);
    }
  }

  pollDeadlines(nowMs: number): void {
    for (const [key, timer] of this.timers) {
      if (timer.state !== "Fired" || timer.nextLookMs === null || timer.nextLookMs > nowMs) continue;
      if (!timer.awaitingReport) {
        timer.attempt++;
        timer.awaitingReport = true;
        timer.nextLookMs = nowMs + timer.policy!.completionTimeoutMs;
        this.published.push(`${key}#${timer.attempt}`);
      } else {
        this.failure(timer, "timeout", nowMs);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------

// Full-length runs: a Missed timer and a later retry of it need several steps in a row.
const stepsArb = fc.array(stepArb, { minLength: 1, maxLength: 40, size: "max" });

describe("completion tracking against its model (CONTRACT §11)", () => {
  it("when random schedules, reports, clock moves, polls and restarts run, then the service matches the model", async () => {
    await fc.assert(
      fc.asyncProperty(stepsArb, async (steps) => {
        const folder = mkdtempSync(join(tmpdir(), "delivery-model-"));
        const path = join(folder, "timer.db");
        const clock = new FakeClock(T0);
        const publisher = new RecordingEventPublisher();
        const metrics = new RecordingMetrics();
        const calendar = new CronerCalendar();
        let store: SqliteTimerStore = await openSqliteTimerStore({ path, writerThread: false });
        const build = () => ({
          processor: new TimerCommandProcessor({
            decoder: new CommandDecoder({ subjectPrefix: "timer", maxHorizonDays: 10, maxClockSkewMs: 86_400_000, clock, calendar }),
            store,
            publisher,
            clock,
            metrics,
            logger: silentLogger,
            onScheduled: () => undefined,
          }),
          due: new DueTimerPoll({
            store,
            publisher,
            clock,
            metrics,
            logger: silentLogger,
            batchSize: 2,
            owner: "a",
            claimTtlMs: 30_000,
            calendar,
            catchUps: new InProcessCatchUps(calendar),
          }),
          deadlines: new DeliveryDeadlinePoll({
            store,
            publisher,
            clock,
            metrics,
            logger: silentLogger,
            batchSize: 2,
            owner: "a",
            claimTtlMs: 30_000,
          }),
        });
        let app = build();
        const model = new Model();
        let id = 0;
        const send = (kind: string, type: string, ts: number, payload: Record<string, unknown>) =>
          app.processor.process([
            rawCommand(`timer.commands.${kind}.t`, {
              id: `m${++id}`,
              type,
              tenantId: "t",
              timestampMs: ts,
              payload: { tenantId: "t", ...payload },
            }),
          ]);
        try {
          for (const step of steps) {
            const nowMs = clock.now();
            switch (step.kind) {
              case "schedule": {
                const dueAtMs = T0 + step.slot * 500;
                await send("schedule", "ScheduleTimer", step.ts, {
                  serviceCallId: step.key,
                  dueAt: new Date(dueAtMs).toISOString(),
                  ...(step.policy === null ? {} : { delivery: step.policy }),
                  ...(step.lateness === null ? {} : { maxLatenessMs: step.lateness }),
                });
                model.schedule(step.key, dueAtMs, step.ts, step.policy, step.lateness);
                break;
              }
              case "complete":
                await send("complete", "TimerCompleted", step.ts, {
                  serviceCallId: step.key,
                  ...(step.result === null ? {} : { result: step.result }),
                });
                model.complete(step.key, step.ts, step.result, nowMs);
                break;
              case "fail":
                await send("fail", "TimerFailed", step.ts, { serviceCallId: step.key, reason: step.reason });
                model.fail(step.key, step.ts, step.reason, nowMs);
                break;
              case "retry":
                await send("retry", "RetryTimer", step.ts, { serviceCallId: step.key });
                model.retry(step.key, step.ts);
                break;
              case "advance":
                clock.advance(step.ms);
                break;
              case "pollDue":
                while ((await app.due.poll()).full);
                model.pollDue(nowMs);
                break;
              case "pollDeadlines":
                while ((await app.deadlines.poll()).full);
                model.pollDeadlines(nowMs);
                break;
              case "restart":
                await store.close();
                store = await openSqliteTimerStore({ path, writerThread: false });
                app = build();
                break;
            }
            const published = publisher.dueTimeReached.map((e) => `${e.serviceCallId}#${e.attempt ?? 0}`);
            expect(published.sort()).toEqual([...model.published].sort());
            for (const key of KEYS) {
              const expected = model.timers.get(key);
              const actual = await store.get({ tenantId: "t", serviceCallId: key });
              if (expected === undefined) {
                expect(actual).toBeUndefined();
                continue;
              }
              expect({
                state: actual?.state,
                commandTs: actual?.commandTs,
                attempt: actual?.attempt ?? 0,
                firedAtMs: actual?.firedAtMs ?? null,
                completedAtMs: actual?.completedAtMs ?? null,
                result: actual?.result ?? null,
                lastReason: actual?.lastReason ?? null,
                nextLookMs: actual?.deadlineAtMs ?? null,
              }).toEqual({
                state: expected.state,
                commandTs: expected.commandTs,
                attempt: expected.attempt,
                firedAtMs: expected.firedAtMs,
                completedAtMs: expected.completedAtMs,
                result: expected.result,
                lastReason: expected.lastReason,
                nextLookMs: expected.state === "Fired" ? expected.nextLookMs : null,
              });
            }
          }
        } finally {
          await store.close();
          rmSync(folder, { recursive: true, force: true });
        }
      }),
      { numRuns: 150 },
    );
  }, 300_000);
});
