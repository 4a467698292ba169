import { describe, expect, it } from "vitest";
import { dueEventId, formatInstant, parseInstant, readInstant } from "../../../src/domain/due-time.js";

const utc = (iso: string) => Date.parse(iso);

describe("parseInstant: accepted forms", () => {
  it("when the offset is Z, then the instant is UTC", () => {
    expect(parseInstant("2026-11-25T22:00:00Z")).toBe(utc("2026-11-25T22:00:00.000Z"));
  });

  it("when the offset and the T are lower case, then they are accepted", () => {
    expect(parseInstant("2026-11-25t22:00:00z")).toBe(utc("2026-11-25T22:00:00.000Z"));
  });

  it("when the offset is +02:00, then two hours are subtracted", () => {
    expect(parseInstant("2026-11-25T22:00:00+02:00")).toBe(utc("2026-11-25T20:00:00.000Z"));
  });

  it("when the offset is -05:30, then five and a half hours are added", () => {
    expect(parseInstant("2026-11-25T22:00:00-05:30")).toBe(utc("2026-11-26T03:30:00.000Z"));
  });

  it("when the offset has no colon (+0200), then it is accepted like +02:00", () => {
    expect(parseInstant("2026-11-25T22:00:00+0200")).toBe(utc("2026-11-25T20:00:00.000Z"));
  });

  it("when the offset is -00:00 or +23:59, then it is accepted", () => {
    expect(parseInstant("2026-11-25T22:00:00-00:00")).toBe(utc("2026-11-25T22:00:00.000Z"));
    expect(parseInstant("2026-11-25T22:00:00+23:59")).toBe(utc("2026-11-24T22:01:00.000Z"));
  });

  it("when the seconds are left out, then they are zero", () => {
    expect(parseInstant("2026-11-25T22:07Z")).toBe(utc("2026-11-25T22:07:00.000Z"));
    expect(parseInstant("2026-11-25T22:07+01:00")).toBe(utc("2026-11-25T21:07:00.000Z"));
  });

  it.each([
    ["1 digit", "2026-11-25T22:00:00.5Z", 500],
    ["2 digits", "2026-11-25T22:00:00.25Z", 250],
    ["3 digits", "2026-11-25T22:00:00.123Z", 123],
    ["4 digits", "2026-11-25T22:00:00.1239Z", 123],
    ["6 digits", "2026-11-25T22:00:00.999999Z", 999],
    ["9 digits", "2026-11-25T22:00:00.000999999Z", 0],
    ["12 digits", "2026-11-25T22:00:00.987654321987Z", 987],
    ["30 digits", `2026-11-25T22:00:00.${"9".repeat(30)}Z`, 999],
  ])("when the fraction has %s, then it is truncated (not rounded) to milliseconds", (_name, text, millis) => {
    expect(parseInstant(text)).toBe(utc("2026-11-25T22:00:00.000Z") + millis);
  });

  it("when the fraction is separated by a comma, then it is read like a dot", () => {
    expect(parseInstant("2026-11-25T22:00:00,75Z")).toBe(utc("2026-11-25T22:00:00.750Z"));
  });

  it("when the date is 29 February of a leap year, then it is accepted (including 2000)", () => {
    expect(parseInstant("2024-02-29T00:00:00Z")).toBe(utc("2024-02-29T00:00:00.000Z"));
    expect(parseInstant("2000-02-29T12:00:00Z")).toBe(utc("2000-02-29T12:00:00.000Z"));
    expect(parseInstant("2400-02-29T00:00:00Z")).toBe(utc("2400-02-29T00:00:00.000Z"));
  });

  it("when the year is below 100, then it is not mapped to the 1900s", () => {
    expect(formatInstant(parseInstant("0042-03-04T05:06:07Z")!)).toBe("0042-03-04T05:06:07.000Z");
  });

  it("when the offset moves the instant across a day, month and year boundary, then the UTC result is right", () => {
    expect(parseInstant("2027-01-01T00:30:00+01:00")).toBe(utc("2026-12-31T23:30:00.000Z"));
  });

  it("when the last valid values of each field are used, then they are accepted", () => {
    expect(parseInstant("2026-12-31T23:59:59.999Z")).toBe(utc("2026-12-31T23:59:59.999Z"));
    expect(parseInstant("2026-04-30T00:00:00Z")).toBe(utc("2026-04-30T00:00:00.000Z"));
  });
});

describe("parseInstant: rejected forms", () => {
  it.each([
    ["no offset (ambiguous)", "2026-11-25T22:00:00"],
    ["no offset, with a fraction", "2026-11-25T22:00:00.000"],
    ["30 February", "2026-02-30T00:00:00Z"],
    ["29 February of a common year", "2026-02-29T00:00:00Z"],
    ["29 February 1900 (divisible by 100, not by 400)", "1900-02-29T00:00:00Z"],
    ["31 April", "2026-04-31T00:00:00Z"],
    ["month 13", "2026-13-01T00:00:00Z"],
    ["month 00", "2026-00-01T00:00:00Z"],
    ["day 00", "2026-01-00T00:00:00Z"],
    ["day 32", "2026-01-32T00:00:00Z"],
    ["hour 24", "2026-11-25T24:00:00Z"],
    ["minute 60", "2026-11-25T22:60:00Z"],
    ["second 60 (leap second)", "2026-12-31T23:59:60Z"],
    ["offset +24:00", "2026-11-25T22:00:00+24:00"],
    ["offset minutes 60", "2026-11-25T22:00:00+01:60"],
    ["offset hours only", "2026-11-25T22:00:00+02"],
    ["a date only", "2026-11-25"],
    ["a date only with Z", "2026-11-25Z"],
    ["a space instead of T", "2026-11-25 22:00:00Z"],
    ["trailing space", "2026-11-25T22:00:00Z "],
    ["leading space", " 2026-11-25T22:00:00Z"],
    ["a trailing newline", "2026-11-25T22:00:00Z\n"],
    ["an empty fraction", "2026-11-25T22:00:00.Z"],
    ["a fraction without seconds", "2026-11-25T22:00.5Z"],
    ["a one-digit hour", "2026-11-25T2:00:00Z"],
    ["a five-digit year", "12026-11-25T22:00:00Z"],
    ["an expanded year", "+002026-11-25T22:00:00Z"],
    ["a week date", "2026-W48-3T22:00:00Z"],
    ["an ordinal date", "2026-329T22:00:00Z"],
    ["the basic format", "20261125T220000Z"],
    ["a time zone name", "2026-11-25T22:00:00 UTC"],
    ["a bracketed zone", "2026-11-25T22:00:00Z[Europe/Paris]"],
    ["RFC 2822", "Wed, 25 Nov 2026 22:00:00 GMT"],
    ["epoch milliseconds as text", "1764108000000"],
    ["garbage", "tomorrow at noon"],
    ["the empty string", ""],
    ["non-ASCII digits", "٢٠٢٦-11-25T22:00:00Z"],
  ])("when the text is %s, then it is rejected", (_name, text) => {
    expect(parseInstant(text)).toBeUndefined();
  });
});

describe("readInstant: what is wrong", () => {
  it.each([
    ["month 13", "2026-13-01T09:00:00Z", "no such date"],
    ["30 February", "2026-02-30T09:00:00Z", "no such date"],
    ["29 February of a common year", "2026-02-29T09:00:00Z", "no such date"],
    ["day 00", "2026-01-00T09:00:00Z", "no such date"],
    ["hour 25", "2026-03-01T25:00:00Z", "no such date"],
    ["minute 60", "2026-03-01T09:60:00Z", "no such date"],
    ["second 60", "2026-03-01T09:00:60Z", "no such date"],
    ["offset +24:00", "2026-03-01T09:00:00+24:00", "no such offset"],
    ["offset minutes 60", "2026-03-01T09:00:00-01:60", "no such offset"],
    ["year 0000 pushed into year -1 by its offset", "0000-01-01T00:00:00+01:00", "before year 0000"],
    ["no offset", "2026-03-01T09:00:00", "format"],
    ["a space instead of T", "2026-03-01 09:00:00Z", "format"],
    ["garbage", "soon", "format"],
  ])("when the text has %s, then the problem is %s", (_name, text, problem) => {
    expect(readInstant(text)).toEqual({ ok: false, problem });
  });

  it("when the text is an instant, then it reads its epoch milliseconds", () => {
    expect(readInstant("2026-03-01T09:00:00+01:00")).toEqual({ ok: true, epochMs: utc("2026-03-01T08:00:00.000Z") });
  });
});

describe("formatInstant", () => {
  it("when given epoch milliseconds, then it writes UTC with exactly three fraction digits and Z", () => {
    expect(formatInstant(utc("2026-11-25T22:00:00.000Z"))).toBe("2026-11-25T22:00:00.000Z");
    expect(formatInstant(utc("2026-11-25T22:00:00.007Z"))).toBe("2026-11-25T22:00:00.007Z");
  });

  it("when the text was parsed from another offset, then the formatted text is the same instant in UTC", () => {
    expect(formatInstant(parseInstant("2026-11-25T22:00:00.123456+02:00")!)).toBe("2026-11-25T20:00:00.123Z");
  });

  it("when formatted text is parsed again, then it is the same instant", () => {
    for (const ms of [0, 1, 1_764_108_000_123, 253_402_300_799_999]) {
      expect(parseInstant(formatInstant(ms))).toBe(ms);
    }
  });
});

describe("dueEventId", () => {
  it("when given a key, a due time and a generation, then the id is tenantId:serviceCallId:dueAtMs:generation", () => {
    expect(dueEventId("acme", "call-1", 1_764_108_000_000, 3)).toBe("acme:call-1:1764108000000:3");
  });

  it("when the serviceCallId contains colons, then it is kept as is", () => {
    expect(dueEventId("acme", "a:b:c", 5, 1)).toBe("acme:a:b:c:5:1");
  });

  it("when two firings of one key have different due times, then their ids differ", () => {
    expect(dueEventId("acme", "call-1", 1, 1)).not.toBe(dueEventId("acme", "call-1", 2, 1));
  });

  it("when two versions of one key share a due time, then their ids differ", () => {
    expect(dueEventId("acme", "call-1", 1, 1)).not.toBe(dueEventId("acme", "call-1", 1, 2));
  });
});
