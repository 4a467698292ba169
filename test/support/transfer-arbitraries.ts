import fc from "fast-check";
import type { TransferRecord } from "../../src/app/transfer/timer-transfer.js";
import type { Timer, TimerState } from "../../src/domain/timer.js";
import { compareCodePoints, compareTimerKeys } from "../../src/domain/code-point-order.js";
import { isServiceCallId } from "../../src/app/commands/command-text.js";

/** Random valid records of an export (CONTRACT §18): any state with the members it may carry. */

const STATES: readonly TimerState[] = ["Scheduled", "Reached", "Cancelled", "Missed", "Fired", "Completed", "Failed", "TimedOut"];
const TRACKED = new Set<TimerState>(["Fired", "Completed", "Failed", "TimedOut"]);

/** Year 1 to 2200, and the instants around the epoch. */
const instant = fc.oneof(fc.integer({ min: -62_135_596_800_000, max: 7_258_118_400_000 }), fc.integer({ min: -1_000, max: 1_000 }));
const maybe = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: null });
const idChars = fc.constantFrom("a", "b", "Z", "0", "-", ":", "é", "ключ", "😀", "\u{10FFFF}", " ", "_");
const serviceCallId = fc.string({ unit: idChars, minLength: 1, maxLength: 12 }).filter(isServiceCallId);
const tenantId = fc.constantFrom("acme", "globex", "T-1", "z_9");
const codeText = (max: number) => fc.string({ unit: idChars, minLength: 1, maxLength: max });

const repeat = fc.oneof(
  fc.record({
    everyMs: fc.integer({ min: 1_000, max: 10 ** 10 }),
    untilMs: maybe(instant),
    maxOccurrences: maybe(fc.integer({ min: 1, max: 10 ** 6 })),
    firstDueAtMs: instant,
  }),
  fc.record({
    cron: fc.constantFrom("0 9 * * MON-FRI", "*/5 * * * *", "30 2 1 * *"),
    timezone: fc.constantFrom("UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"),
    untilMs: maybe(instant),
    maxOccurrences: maybe(fc.integer({ min: 1, max: 10 ** 6 })),
    firstDueAtMs: instant,
  }),
);

const delivery = fc.record({
  maxRetries: fc.integer({ min: 0, max: 100 }),
  backoffMs: fc.integer({ min: 100, max: 10 ** 7 }),
  completionTimeoutMs: fc.integer({ min: 1_000, max: 10 ** 8 }),
});

const trace = fc.record({
  traceId: fc.stringMatching(/^[0-9a-f]{32}$/).filter((s) => !/^0+$/.test(s)),
  traceFlags: fc.integer({ min: 0, max: 255 }),
  traceState: maybe(fc.constantFrom("vendor=a:1", "x=y,z=w", "")),
  traceSpanId: maybe(fc.stringMatching(/^[0-9a-f]{16}$/)),
});

/** Drops the members that are unset, as the stores read a timer back. */
function absentWhenUnset(timer: Record<string, unknown>): Timer {
  for (const member of ["delivery", "createdBy", "createdVia", "firedAtMs", "completedAtMs", "result", "lastReason", "deadlineAtMs"]) {
    if (timer[member] === null) delete timer[member];
  }
  if (timer.attempt === 0) delete timer.attempt;
  return timer as unknown as Timer;
}

export const timerArbitrary: fc.Arbitrary<Timer> = fc
  .record({
    tenantId,
    serviceCallId,
    state: fc.constantFrom(...STATES),
    tombstone: fc.boolean(),
    dueAtMs: instant,
    data: maybe(fc.json({ maxDepth: 2 })),
    correlationId: maybe(codeText(10)),
    commandTs: fc.integer({ min: 0, max: 2 ** 45 }),
    generation: fc.integer({ min: 1, max: 2_147_483_647 }),
    registeredAtMs: instant,
    reachedAtMs: maybe(instant),
    updatedAtMs: instant,
    repeat: maybe(repeat),
    occurrence: fc.integer({ min: 1, max: 2 ** 40 }),
    maxLatenessMs: maybe(fc.integer({ min: 0, max: 10 ** 9 })),
    delivery,
    createdBy: maybe(codeText(8)),
    createdVia: maybe(codeText(8)),
    attempt: fc.integer({ min: 0, max: 101 }),
    firedAtMs: maybe(instant),
    completedAtMs: maybe(instant),
    result: maybe(fc.string({ maxLength: 20 }).filter((s) => !/[\uD800-\uDFFF]/.test(s))),
    lastReason: maybe(codeText(10)),
    deadlineAtMs: instant,
    trace: fc.option(trace, { nil: undefined }),
  })
  .map(({ tombstone, trace: traceMembers, delivery: policy, deadlineAtMs, ...t }) => {
    const tracked = TRACKED.has(t.state);
    return absentWhenUnset({
      ...t,
      dueAtMs: tombstone && t.state === "Cancelled" ? null : t.dueAtMs,
      repeat: tracked ? null : t.repeat,
      delivery: tracked || (t.repeat === null && t.occurrence % 2 === 0) ? policy : null,
      deadlineAtMs: t.state === "Fired" || t.occurrence % 3 === 0 ? deadlineAtMs : null,
      ...(traceMembers ?? {}),
    });
  });

export const prefixCancelArbitrary: fc.Arbitrary<TransferRecord> = fc
  .record({ tenantId, serviceCallIdPrefix: serviceCallId, commandTs: fc.integer({ min: 0, max: 2 ** 45 }), recordedAtMs: instant })
  .map((prefixCancel) => ({ kind: "prefixCancel", prefixCancel }));

/** A store's worth of records with distinct keys, in export order. */
export const exportArbitrary: fc.Arbitrary<TransferRecord[]> = fc
  .tuple(
    fc.uniqueArray(timerArbitrary, { maxLength: 25, selector: (t) => `${t.tenantId}\u0000${t.serviceCallId}` }),
    fc.uniqueArray(prefixCancelArbitrary, {
      maxLength: 4,
      selector: (r) => (r.kind === "prefixCancel" ? `${r.prefixCancel.tenantId}\u0000${r.prefixCancel.serviceCallIdPrefix}` : ""),
    }),
  )
  .map(([timers, cancels]) => [
    ...[...timers].sort(compareTimerKeys).map((timer): TransferRecord => ({ kind: "timer", timer })),
    ...[...cancels].sort((a, b) => {
      if (a.kind !== "prefixCancel" || b.kind !== "prefixCancel") return 0;
      return (
        compareCodePoints(a.prefixCancel.tenantId, b.prefixCancel.tenantId) ||
        compareCodePoints(a.prefixCancel.serviceCallIdPrefix, b.prefixCancel.serviceCallIdPrefix)
      );
    }),
  ]);
