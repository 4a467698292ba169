import { describe, expect, it } from "vitest";
import { appendHistory, commandEntry, firingEntry, parseHistory, timeoutEntry } from "../../../src/domain/timer-history.js";
import type { KeyCommand } from "../../../src/domain/timer-command.js";

const NOW = Date.parse("2026-12-01T09:00:00.000Z");
const cancel = (timestampMs: number): KeyCommand => ({
  kind: "cancel",
  tenantId: "acme",
  serviceCallId: "a",
  correlationId: null,
  timestampMs,
});

function historyOf(count: number, keep: number): string | null {
  let stored: string | null = null;
  for (let ts = 1; ts <= count; ts++) stored = appendHistory(stored, commandEntry(NOW, cancel(ts), undefined, "applied"), keep);
  return stored;
}

describe("timer history (CONTRACT §19)", () => {
  it("when entries are appended, then the text is a JSON array of them, oldest first", () => {
    const entries = parseHistory(historyOf(3, 20));
    expect(entries.map((e) => (e.kind === "command" ? e.timestampMs : 0))).toEqual([1, 2, 3]);
    expect(entries[0]).toEqual({
      at: "2026-12-01T09:00:00.000Z",
      kind: "command",
      type: "CancelTimer",
      timestampMs: 1,
      outcome: "applied",
    });
  });

  it.each([1, 2, 5, 20])("when more than %i entries come, then the last ones are kept, the oldest dropped first", (keep) => {
    const kept = parseHistory(historyOf(keep + 7, keep)).map((e) => (e.kind === "command" ? e.timestampMs : 0));
    expect(kept).toEqual(Array.from({ length: keep }, (_, i) => 8 + i));
  });

  it("when a stored history is longer than kept (fewer entries configured now), then the next append cuts it to the limit", () => {
    const kept = parseHistory(appendHistory(historyOf(10, 20), commandEntry(NOW, cancel(11), undefined, "applied"), 3));
    expect(kept.map((e) => (e.kind === "command" ? e.timestampMs : 0))).toEqual([9, 10, 11]);
  });

  it("when texts inside entries look like an entry's start, then they are escaped and nothing is cut there", () => {
    const tricky = '","x":1},{"at":"2026';
    let stored: string | null = null;
    for (let ts = 1; ts <= 4; ts++)
      stored = appendHistory(stored, commandEntry(NOW, cancel(ts), { commandId: tricky }, "ignored", { reason: tricky }), 3);
    const entries = parseHistory(stored);
    expect(entries).toHaveLength(3);
    expect(entries.every((e) => e.kind === "command" && e.commandId === tricky && e.reason === tricky)).toBe(true);
  });

  it("when firings and time-outs are recorded, then their entries carry what §19 names", () => {
    const fired = firingEntry(NOW, { kind: "fired", eventId: "acme:a:1:2", attempt: 1, lateMs: 12, occurrence: 3, published: true });
    const timeout = timeoutEntry(NOW, 2, "TimedOut: no attempts left");
    expect(parseHistory(`[${fired},${timeout}]`)).toEqual([
      { at: "2026-12-01T09:00:00.000Z", kind: "fired", eventId: "acme:a:1:2", attempt: 1, lateMs: 12, occurrence: 3, published: true },
      { at: "2026-12-01T09:00:00.000Z", kind: "timeout", attempt: 2, then: "TimedOut: no attempts left" },
    ]);
  });
});
