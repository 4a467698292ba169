import { describe, expect, it } from "vitest";
import { decodeHeader, decodeRecord, encodeHeader, encodeRecord, TransferLineError } from "../../../src/app/transfer/transfer-lines.js";
import { ImportLineError, importTimers } from "../../../src/app/transfer/import-timers.js";
import { exportTimers } from "../../../src/app/transfer/export-timers.js";
import { MemoryTimerTransfer } from "../../../src/adapters/memory/memory-timer-transfer.js";
import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";
import { fixtureRecords, withoutHistory } from "../../support/transfer-fixtures.js";

const T0 = Date.parse("2026-11-28T12:00:00.000Z");
const HEADER = encodeHeader({ exportedAtMs: T0, store: "sqlite" });

/** A valid timer line, as an object to spoil one member of. */
function timerLine(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    kind: "timer",
    tenantId: "acme",
    serviceCallId: "invoice-42",
    state: "Scheduled",
    dueAt: "2026-12-01T09:00:00.000Z",
    generation: 1,
    commandTs: 1,
    registeredAt: "2026-11-28T12:00:00.000Z",
    updatedAt: "2026-11-28T12:00:00.000Z",
    occurrence: 1,
    ...overrides,
  };
}

function problemOf(line: Record<string, unknown> | string, lineNumber = 7): string {
  try {
    decodeRecord(typeof line === "string" ? line : JSON.stringify(line), lineNumber, new CronerCalendar());
  } catch (error) {
    expect(error).toBeInstanceOf(TransferLineError);
    expect((error as TransferLineError).line).toBe(lineNumber);
    return (error as Error).message;
  }
  throw new Error("the line was accepted");
}

async function* linesOf(...lines: string[]): AsyncIterable<string> {
  yield* lines;
}

describe("export lines", () => {
  it("when every kind of record is encoded and decoded, then it comes back unchanged", () => {
    for (const record of fixtureRecords(T0)) expect(decodeRecord(encodeRecord(record), 2)).toEqual(record);
  });

  it("when the header is encoded, then it names the format, the version, the time and the store", () => {
    expect(JSON.parse(HEADER)).toEqual({
      format: "timer-service-export",
      version: 1,
      exportedAt: "2026-11-28T12:00:00.000Z",
      store: "sqlite",
    });
    expect(() => decodeHeader(HEADER)).not.toThrow();
  });

  it("when the first line is missing, not JSON, not the header, or of another version, then line 1 says so", () => {
    expect(() => decodeHeader(undefined)).toThrow(
      /^line 1: missing header: the first line must be \{"format":"timer-service-export","version":1/,
    );
    expect(() => decodeHeader("")).toThrow(/^line 1: missing header/);
    expect(() => decodeHeader("{oops")).toThrow(/^line 1: not JSON: /);
    expect(() => decodeHeader(JSON.stringify(timerLine()))).toThrow(/^line 1: not a timer-service export: the first line must be/);
    expect(() => decodeHeader('{"format":"other","version":1}')).toThrow(/^line 1: not a timer-service export/);
    expect(() => decodeHeader('{"format":"timer-service-export","version":2}')).toThrow(
      "line 1: unknown version 2: this release reads version 1",
    );
    expect(() => decodeHeader('{"format":"timer-service-export"}')).toThrow(
      "line 1: unknown version undefined: this release reads version 1",
    );
  });

  it.each([
    ["not JSON", "{", /^line 7: not JSON: /],
    ["an array", "[]", 'line 7: kind: must be "timer" or "prefixCancel", got none'],
    ["no kind", JSON.stringify({ tenantId: "acme" }), 'line 7: kind: must be "timer" or "prefixCancel", got none'],
    ["an unknown kind", JSON.stringify({ kind: "job" }), 'line 7: kind: must be "timer" or "prefixCancel", got "job"'],
    ["an unknown member", timerLine({ colour: "red" }), /^line 7: unknown member "colour"; valid members: kind, tenantId, serviceCallId, /],
    ["a missing member", timerLine({ generation: undefined }), /^line 7: generation: missing; it must be an integer from 1 to 2147483647/],
    [
      "a bad tenant",
      timerLine({ tenantId: "a b" }),
      'line 7: tenantId: must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$ and not be _unknown, got "a b"',
    ],
    [
      "a control character in the id",
      timerLine({ serviceCallId: "a\u0001" }),
      /^line 7: serviceCallId: must be 1\.\.256 code points without control characters/,
    ],
    [
      "an unknown state",
      timerLine({ state: "Done" }),
      /^line 7: state: must be one of Scheduled, Reached, Cancelled, Missed, Fired, Completed, Failed, TimedOut, got "Done"/,
    ],
    [
      "a dueAt without offset",
      timerLine({ dueAt: "2026-12-01T09:00:00" }),
      /^line 7: dueAt: must be an ISO 8601 date-time with an offset, like 2026-12-01T09:00:00.000Z, got "2026-12-01T09:00:00"/,
    ],
    ["no dueAt outside Cancelled", timerLine({ dueAt: null }), "line 7: dueAt: must be set unless the state is Cancelled"],
    ["a fractional commandTs", timerLine({ commandTs: 1.5 }), /^line 7: commandTs: must be an integer from 0 to/],
    ["a negative commandTs", timerLine({ commandTs: -1 }), /^line 7: commandTs: must be at least 0, got -1/],
    ["generation 0", timerLine({ generation: 0 }), "line 7: generation: must be at least 1, got 0"],
    ["data that is not JSON text", timerLine({ data: "{x" }), /^line 7: data: must be the JSON text of the timer's data/],
    ["data as a value", timerLine({ data: { a: 1 } }), /^line 7: data: must be the JSON text of the timer's data/],
    ["data too large", timerLine({ data: JSON.stringify("x".repeat(16_383)) }), /^line 7: data: must be at most 16384 UTF-8 bytes/],
    ["a long correlationId", timerLine({ correlationId: "c".repeat(129) }), /^line 7: correlationId: must be 1\.\.128 code points/],
    [
      "a repeat with both rules",
      timerLine({ repeat: { everyMs: 1000, cron: "* * * * *", timezone: "UTC", firstDueAt: "2026-12-01T09:00:00Z" } }),
      /^line 7: repeat: must have exactly one of everyMs or cron/,
    ],
    ["a repeat without its first occurrence", timerLine({ repeat: { everyMs: 1000 } }), /^line 7: repeat\.firstDueAt: missing/],
    [
      "a short interval",
      timerLine({ repeat: { everyMs: 999, firstDueAt: "2026-12-01T09:00:00Z" } }),
      /^line 7: repeat\.everyMs: must be at least 1000, got 999/,
    ],
    [
      "an unknown repeat member",
      timerLine({ repeat: { everyMs: 1000, firstDueAt: "2026-12-01T09:00:00Z", jitter: 1 } }),
      'line 7: repeat: unknown member "jitter"',
    ],
    [
      "a cron the service cannot compute",
      timerLine({ repeat: { cron: "61 * * * *", timezone: "UTC", firstDueAt: "2026-12-01T09:00:00Z" } }),
      /^line 7: repeat\.cron: /,
    ],
    [
      "an unknown time zone",
      timerLine({ repeat: { cron: "0 9 * * *", timezone: "Mars/Olympus", firstDueAt: "2026-12-01T09:00:00Z" } }),
      /^line 7: repeat\.timezone: /,
    ],
    [
      "a delivery short of a member",
      timerLine({ delivery: { maxRetries: 1, backoffMs: 100 } }),
      /^line 7: delivery\.completionTimeoutMs: missing/,
    ],
    [
      "too many retries",
      timerLine({ delivery: { maxRetries: 101, backoffMs: 100, completionTimeoutMs: 1000 } }),
      "line 7: delivery.maxRetries: must be at most 100, got 101",
    ],
    [
      "repeat with delivery",
      timerLine({
        repeat: { everyMs: 1000, firstDueAt: "2026-12-01T09:00:00Z" },
        delivery: { maxRetries: 0, backoffMs: 100, completionTimeoutMs: 1000 },
      }),
      "line 7: delivery: cannot go with repeat (CONTRACT §11)",
    ],
    ["a tracked state without delivery", timerLine({ state: "Completed" }), "line 7: delivery: is required in state Completed"],
    [
      "Fired without its deadline",
      timerLine({ state: "Fired", delivery: { maxRetries: 0, backoffMs: 100, completionTimeoutMs: 1000 } }),
      "line 7: deadlineAt: is required in state Fired",
    ],
    [
      "a bad trace id",
      timerLine({ traceId: "0".repeat(32), traceFlags: 1 }),
      /^line 7: traceId: must be 32 lower-case hex digits, not all zero/,
    ],
    ["trace members without a trace id", timerLine({ traceSpanId: "00f067aa0ba902b7" }), "line 7: traceSpanId: needs traceId"],
    [
      "a trace id without flags",
      timerLine({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736" }),
      "line 7: traceFlags: is required with traceId",
    ],
    [
      "a prefix cancel without its time",
      JSON.stringify({ kind: "prefixCancel", tenantId: "acme", serviceCallIdPrefix: "a", commandTs: 1 }),
      /^line 7: recordedAt: missing/,
    ],
    [
      "a prefix cancel with an empty prefix",
      JSON.stringify({ kind: "prefixCancel", tenantId: "acme", serviceCallIdPrefix: "", commandTs: 1, recordedAt: "2026-11-28T12:00:00Z" }),
      /^line 7: serviceCallIdPrefix: must be 1\.\.256 code points/,
    ],
  ])("when a line has %s, then the import names the line and the member", (_, line, expected) => {
    const message = problemOf(line as Record<string, unknown> | string);
    if (typeof expected === "string") expect(message).toBe(expected);
    else expect(message).toMatch(expected);
  });
});

describe("importTimers", () => {
  const lines = (count: number, commandTs = 1) =>
    Array.from({ length: count }, (_, i) => JSON.stringify(timerLine({ serviceCallId: `t-${String(i).padStart(4, "0")}`, commandTs })));

  it("when a file is imported, then its records are written a batch at a time and counted", async () => {
    const target = new MemoryTimerTransfer();
    const summary = await importTimers(target, linesOf(HEADER, ...lines(25)), { batchLines: 10 });
    expect(summary).toEqual({ created: 25, replaced: 0, kept: 0, prefixCancels: { created: 0, replaced: 0, kept: 0 }, lines: 26 });
    expect(target.batches).toBe(3);
    expect(await importTimers(target, linesOf(HEADER, ...lines(25, 2)), { batchLines: 10 })).toMatchObject({ replaced: 25 });
    expect(await importTimers(target, linesOf(HEADER, ...lines(25, 2)), { batchLines: 10 })).toMatchObject({
      created: 0,
      replaced: 0,
      kept: 25,
    });
  });

  it("when a line is bad, then nothing of its batch is written, earlier batches are, and the error says which line", async () => {
    const target = new MemoryTimerTransfer();
    const good = lines(25);
    const file = [HEADER, ...good.slice(0, 14), JSON.stringify(timerLine({ serviceCallId: "bad", state: "Done" })), ...good.slice(14)];
    const error = await importTimers(target, linesOf(...file), { batchLines: 10 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ImportLineError);
    expect((error as ImportLineError).message).toMatch(/^line 16: state: must be one of/);
    expect((error as ImportLineError).imported).toMatchObject({ created: 10 });
    expect(target.timers.size).toBe(10);
  });

  it("when the header is wrong, then nothing is written", async () => {
    const target = new MemoryTimerTransfer();
    await expect(importTimers(target, linesOf(...lines(3)))).rejects.toThrow(/^line 1: not a timer-service export/);
    await expect(importTimers(target, linesOf())).rejects.toThrow(/^line 1: missing header/);
    await expect(importTimers(target, linesOf('{"format":"timer-service-export","version":9}', ...lines(3)))).rejects.toThrow(
      "line 1: unknown version 9",
    );
    expect(target.batches).toBe(0);
  });

  it("when a key appears twice in one batch, then the newer line wins and the other counts as kept; blank lines are skipped", async () => {
    const target = new MemoryTimerTransfer();
    const older = JSON.stringify(timerLine({ commandTs: 1, dueAt: "2026-12-01T09:00:00.000Z" }));
    const newer = JSON.stringify(timerLine({ commandTs: 2, dueAt: "2026-12-02T09:00:00.000Z" }));
    expect(await importTimers(target, linesOf(HEADER, newer, "", older))).toMatchObject({ created: 1, kept: 1, lines: 4 });
    expect([...target.timers.values()][0]?.commandTs).toBe(2);
  });

  it("when the batch write fails, then the error is the store's, not a line's", async () => {
    await expect(importTimers(new MemoryTimerTransfer({ failOnBatch: 1 }), linesOf(HEADER, ...lines(3)))).rejects.toThrow("batch 1 failed");
  });
});

describe("exportTimers", () => {
  it("when a store is exported without history, then no line carries one, so the previous release imports it", async () => {
    const source = new MemoryTimerTransfer();
    const records = fixtureRecords(T0);
    expect(records.some((r) => r.kind === "timer" && r.timer.history != null)).toBe(true);
    await source.importBatch(records);
    const chunks: string[] = [];
    await exportTimers(source, { nowMs: T0, write: (chunk) => void chunks.push(chunk) });
    const lines = chunks.join("").split("\n").slice(1, -1);
    expect(lines).toEqual(records.map((record) => encodeRecord(withoutHistory(record))));
    expect(lines.some((line) => line.includes('"history"'))).toBe(false);
  });

  it("when a store is exported, then the header comes first and every record follows, in chunks", async () => {
    const source = new MemoryTimerTransfer();
    const records = fixtureRecords(T0);
    await source.importBatch(records);
    const chunks: string[] = [];
    const summary = await exportTimers(source, { nowMs: T0, history: true, write: (chunk) => void chunks.push(chunk) });
    expect(summary).toEqual({ timers: records.length - 1, prefixCancels: 1 });
    expect(chunks.join("").split("\n")).toEqual([
      encodeHeader({ exportedAtMs: T0, store: "memory" }),
      ...records.map((record) => encodeRecord(record)),
      "",
    ]);
    const target = new MemoryTimerTransfer();
    await importTimers(target, linesOf(...chunks.join("").split("\n").slice(0, -1)));
    expect([...target.timers.values()]).toEqual([...source.timers.values()]);
  });
});

describe("importTimers input", () => {
  it("when the file starts with a byte order mark, then the header is read all the same", async () => {
    const target = new MemoryTimerTransfer();
    const line = JSON.stringify(timerLine());
    expect(await importTimers(target, linesOf(`\uFEFF${HEADER}`, line))).toMatchObject({ created: 1 });
  });
});
