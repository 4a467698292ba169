/** The offset table of a zone: spans between changes, found to the second, from Intl's zone data. */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { ZoneOffsets } from "../../../src/adapters/cron/zone-offsets.js";
import { propertySeed } from "../../support/property-seed.js";

const HOUR_MS = 3_600_000;
const offsets = new ZoneOffsets();

describe("ZoneOffsets.spanAt", () => {
  it("when walked span by span through a year, then the changes are the zone's DST changes, to the second", () => {
    const changes: { atMs: number; offsetMs: number }[] = [];
    let span = offsets.spanAt("Europe/Berlin", Date.parse("2026-01-01T00:00:00Z"));
    while (span.startMs < Date.parse("2027-01-01T00:00:00Z")) {
      if (span.nextOffsetMs !== span.offsetMs && span.endMs < Date.parse("2027-01-01T00:00:00Z"))
        changes.push({ atMs: span.endMs, offsetMs: span.nextOffsetMs });
      const next = offsets.spanAt("Europe/Berlin", span.endMs);
      expect(next.startMs).toBe(span.endMs);
      expect(next.previousOffsetMs).toBe(span.offsetMs);
      span = next;
    }
    expect(changes).toEqual([
      { atMs: Date.parse("2026-03-29T01:00:00Z"), offsetMs: 2 * HOUR_MS },
      { atMs: Date.parse("2026-10-25T01:00:00Z"), offsetMs: HOUR_MS },
    ]);
  });

  it("when asked in local mean time, then the offset has its seconds", () => {
    const span = offsets.spanAt("America/Santiago", Date.parse("0001-06-01T00:00:00Z"));
    expect(span.offsetMs).toBe(-(4 * HOUR_MS + 42 * 60_000 + 45_000));
    expect(span.nextOffsetMs).toBe(span.offsetMs);
  });

  it("when asked anywhere, then the span contains the instant and its offset is the zone's there and just before its end", () => {
    const zones = ["Europe/Berlin", "America/Santiago", "Australia/Lord_Howe", "Africa/Casablanca", "Asia/Kolkata", "UTC"];
    fc.assert(
      fc.property(
        fc.constantFrom(...zones),
        fc.integer({ min: Date.parse("1850-01-01T00:00:00Z"), max: Date.parse("2100-01-01T00:00:00Z") }),
        (zone, ms) => {
          const span = offsets.spanAt(zone, ms);
          expect(span.startMs).toBeLessThanOrEqual(ms);
          expect(span.endMs).toBeGreaterThan(ms);
          expect(offsets.offsetAt(zone, ms)).toBe(span.offsetMs);
          expect(offsets.offsetAt(zone, span.endMs - 1_000)).toBe(span.offsetMs);
          expect(offsets.offsetAt(zone, span.endMs)).toBe(span.nextOffsetMs);
          expect(offsets.offsetAt(zone, span.startMs - 1_000)).toBe(span.previousOffsetMs);
        },
      ),
      { seed: propertySeed(), numRuns: 300 },
    );
  });
});
