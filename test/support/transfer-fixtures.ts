import type { TransferRecord } from "../../src/app/transfer/timer-transfer.js";
import type { Timer } from "../../src/domain/timer.js";
import { encodeRecord } from "../../src/app/transfer/transfer-lines.js";
import { compareTimerKeys } from "../../src/domain/code-point-order.js";

/**
 * Timers in every state of CONTRACT §3, §10, §11 and §13, shaped as the stores read them back
 * (unset tracking and trace members absent), and a prefix cancel in force with a timer it covers
 * that its sweep has not reached. Times are around `t0`.
 */
export function timersInEveryState(t0: number): { readonly timers: Timer[]; readonly prefixCancels: TransferRecord[] } {
  const minute = 60_000;
  const base = {
    data: null,
    correlationId: null,
    generation: 1,
    registeredAtMs: t0 - 10 * minute,
    reachedAtMs: null,
    updatedAtMs: t0 - 5 * minute,
    repeat: null,
    occurrence: 1,
    maxLatenessMs: null,
  } as const;
  const trace = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", traceFlags: 1, traceState: "vendor=a:1", traceSpanId: "00f067aa0ba902b7" };
  const delivery = { maxRetries: 2, backoffMs: 500, completionTimeoutMs: 60_000 };
  const timers: Timer[] = [
    {
      ...base,
      tenantId: "acme",
      serviceCallId: "one-shot",
      state: "Scheduled",
      dueAtMs: t0 + 2 * minute,
      data: '{"invoice":42,"lines":[1,2,3]}',
      correlationId: "req-1",
      commandTs: t0 - 5 * minute,
      generation: 3,
      createdBy: "billing",
      createdVia: "api",
      ...trace,
      // Its history (CONTRACT §19) as the stores write it: each entry's members in the order they are built.
      history:
        `[{"at":"${new Date(t0 - 5 * minute).toISOString()}","kind":"command","type":"ScheduleTimer","commandId":"cmd-1",` +
        `"timestampMs":${t0 - 5 * minute},"outcome":"applied"},{"at":"${new Date(t0 - minute).toISOString()}","kind":"command",` +
        `"type":"CancelTimer","commandId":"admin-2","timestampMs":${t0 - 6 * minute},"outcome":"ignored",` +
        `"reason":"older timestampMs than the timer's last command","operator":{"via":"http","token":true}}]`,
    },
    {
      ...base,
      tenantId: "acme",
      serviceCallId: "every-minute",
      state: "Scheduled",
      dueAtMs: t0 + minute,
      commandTs: t0 - 9 * minute,
      reachedAtMs: t0,
      repeat: { everyMs: minute, untilMs: null, maxOccurrences: 100, firstDueAtMs: t0 - 9 * minute },
      occurrence: 11,
      maxLatenessMs: 5_000,
    },
    {
      ...base,
      tenantId: "acme",
      serviceCallId: "weekday-nine",
      state: "Scheduled",
      dueAtMs: Date.parse("2026-12-01T08:00:00.000Z"),
      commandTs: t0 - 9 * minute,
      reachedAtMs: Date.parse("2026-11-30T08:00:00.000Z"),
      repeat: {
        cron: "0 9 * * MON-FRI",
        timezone: "Europe/Berlin",
        untilMs: Date.parse("2027-06-30T00:00:00.000Z"),
        maxOccurrences: null,
        firstDueAtMs: Date.parse("2026-11-26T08:00:00.000Z"),
      },
      occurrence: 3,
      ...trace,
      traceState: null,
      traceSpanId: null,
    },
    {
      ...base,
      tenantId: "acme",
      serviceCallId: "cancelled",
      state: "Cancelled",
      dueAtMs: t0 + 3 * minute,
      commandTs: t0 - 2 * minute,
      generation: 2,
    },
    { ...base, tenantId: "acme", serviceCallId: "tombstone", state: "Cancelled", dueAtMs: null, commandTs: t0 - 2 * minute },
    {
      ...base,
      tenantId: "acme",
      serviceCallId: "reached",
      state: "Reached",
      dueAtMs: t0 - 3 * minute,
      commandTs: t0 - 6 * minute,
      reachedAtMs: t0 - 3 * minute + 12,
      correlationId: "req-2",
    },
    {
      ...base,
      tenantId: "acme",
      serviceCallId: "missed",
      state: "Missed",
      dueAtMs: t0 - 4 * minute,
      commandTs: t0 - 7 * minute,
      reachedAtMs: t0 - minute,
      maxLatenessMs: 1_000,
    },
    {
      ...base,
      tenantId: "acme",
      serviceCallId: "fired",
      state: "Fired",
      dueAtMs: t0 - minute,
      commandTs: t0 - 8 * minute,
      reachedAtMs: t0 - minute + 5,
      delivery,
      attempt: 1,
      firedAtMs: t0 - minute + 5,
      deadlineAtMs: t0 - minute + 5 + delivery.completionTimeoutMs,
      createdBy: "orders",
      ...trace,
    },
    {
      ...base,
      tenantId: "acme",
      serviceCallId: "fired-retry-waiting",
      state: "Fired",
      dueAtMs: t0 - 2 * minute,
      commandTs: t0 - 8 * minute,
      delivery,
      attempt: 1,
      firedAtMs: t0 - 2 * minute,
      lastReason: "downstream 503",
      deadlineAtMs: t0 + 500,
    },
    {
      ...base,
      tenantId: "acme",
      serviceCallId: "completed",
      state: "Completed",
      dueAtMs: t0 - 3 * minute,
      commandTs: t0 - minute,
      reachedAtMs: t0 - 3 * minute,
      delivery,
      attempt: 2,
      firedAtMs: t0 - 3 * minute,
      completedAtMs: t0 - minute,
      result: "shipped",
      lastReason: "timeout",
    },
    {
      ...base,
      tenantId: "acme",
      serviceCallId: "failed",
      state: "Failed",
      dueAtMs: t0 - 4 * minute,
      commandTs: t0 - minute,
      reachedAtMs: t0 - 2 * minute,
      delivery,
      attempt: 3,
      firedAtMs: t0 - 4 * minute,
      lastReason: "card declined",
    },
    {
      ...base,
      tenantId: "acme",
      serviceCallId: "timed-out",
      state: "TimedOut",
      dueAtMs: t0 - 4 * minute,
      commandTs: t0 - 8 * minute,
      reachedAtMs: t0 - 2 * minute,
      delivery: { maxRetries: 0, backoffMs: 5_000, completionTimeoutMs: 1_000 },
      attempt: 1,
      firedAtMs: t0 - 4 * minute,
      lastReason: "timeout",
    },
    {
      ...base,
      tenantId: "acme",
      serviceCallId: "ключ-😀-\u00e9",
      state: "Scheduled",
      dueAtMs: t0 + 4 * minute,
      commandTs: t0 - minute,
      data: '"ünïcode"',
    },
    // Covered by the prefix cancel below (commandTs ≤ its), not yet reached by its sweep: it must never fire.
    { ...base, tenantId: "globex", serviceCallId: "order-4711:ship", state: "Scheduled", dueAtMs: t0 + minute, commandTs: t0 - 9 * minute },
    { ...base, tenantId: "globex", serviceCallId: "order-4711:bill", state: "Cancelled", dueAtMs: t0 + minute, commandTs: t0 - 2 * minute },
    { ...base, tenantId: "globex", serviceCallId: "order-4712", state: "Scheduled", dueAtMs: t0 + 5 * minute, commandTs: t0 - 9 * minute },
  ];
  const prefixCancels: TransferRecord[] = [
    {
      kind: "prefixCancel",
      prefixCancel: {
        tenantId: "globex",
        serviceCallIdPrefix: "order-4711:",
        commandTs: t0 - 2 * minute,
        recordedAtMs: t0 - 2 * minute + 3,
      },
    },
  ];
  return { timers, prefixCancels };
}

/** The records of the fixture, in the order an export gives them (timers by key, then prefix cancels). */
export function fixtureRecords(t0: number): TransferRecord[] {
  const { timers, prefixCancels } = timersInEveryState(t0);
  return [...[...timers].sort(compareTimerKeys).map((timer): TransferRecord => ({ kind: "timer", timer })), ...prefixCancels];
}

/** The lines an export of `records` holds after its header. */
export function exportLines(records: readonly TransferRecord[]): string[] {
  return records.map((record) => encodeRecord(record));
}

/** The lines of an export, header dropped (its time differs from run to run). */
export async function exportedLines(records: AsyncIterable<TransferRecord>): Promise<string[]> {
  const lines: string[] = [];
  for await (const record of records) lines.push(encodeRecord(record));
  return lines;
}

/** `record` as an export without histories carries it. */
export function withoutHistory(record: TransferRecord): TransferRecord {
  if (record.kind !== "timer") return record;
  const { history: _history, ...timer } = record.timer;
  return { ...record, timer };
}
