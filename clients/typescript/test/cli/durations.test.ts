import { describe, expect, it } from "vitest";
import { formatDuration, joinDurationWords, parseDuration } from "../../src/cli/durations.js";

describe("parseDuration", () => {
  it.each([
    ["10s", 10_000],
    ["10 seconds", 10_000],
    ["1 second", 1_000],
    ["5 minutes", 300_000],
    ["5 min", 300_000],
    ["5m", 300_000],
    ["1h30m", 5_400_000],
    ["1h 30m", 5_400_000],
    ["1 hour 30 minutes", 5_400_000],
    ["1 hour and 30 minutes", 5_400_000],
    ["1h, 30m", 5_400_000],
    ["2 days", 172_800_000],
    ["2d", 172_800_000],
    ["1 week", 604_800_000],
    ["250ms", 250],
    ["250 milliseconds", 250],
    ["1.5h", 5_400_000],
    ["  10 Seconds ", 10_000],
    ["0s", 0],
  ])("when given %j, then it is %d ms", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(["", "10", "5 parsecs", "seconds", "10 seconds later", "1h30", "-5s", "5 months", "1hand30m"])(
    "when given %j, then it is not a duration",
    (text) => {
      expect(parseDuration(text)).toBeUndefined();
    },
  );
});

describe("joinDurationWords", () => {
  it("when --in is followed by a unit word, then both form its value", () => {
    expect(joinDurationWords(["schedule", "--in", "10", "seconds", "--tenant", "t"])).toEqual([
      "schedule",
      "--in",
      "10 seconds",
      "--tenant",
      "t",
    ]);
  });

  it("when --in is followed by several words, then the longest run that reads as a duration is taken", () => {
    expect(joinDurationWords(["--in", "1", "hour", "30", "minutes", "schedule"])).toEqual(["--in", "1 hour 30 minutes", "schedule"]);
    expect(joinDurationWords(["--in=1", "hour", "schedule"])).toEqual(["--in", "1 hour", "schedule"]);
  });

  it("when --in has a complete value, then the next words stay arguments", () => {
    expect(joinDurationWords(["--in", "30s", "schedule"])).toEqual(["--in", "30s", "schedule"]);
    expect(joinDurationWords(["--in", "5", "parsecs"])).toEqual(["--in", "5", "parsecs"]);
  });

  it("when there is no --in, or it comes after --, then the arguments are unchanged", () => {
    expect(joinDurationWords(["schedule", "--at", "tomorrow", "--id", "x"])).toEqual(["schedule", "--at", "tomorrow", "--id", "x"]);
    expect(joinDurationWords(["--", "--in", "10", "seconds"])).toEqual(["--", "--in", "10", "seconds"]);
  });
});

describe("formatDuration", () => {
  it.each([
    [450, "450ms"],
    [5_000, "5s"],
    [125_000, "2m 5s"],
    [3 * 86_400_000 + 4 * 3_600_000 + 59_000, "3d 4h"],
    [86_400_000 + 60_000, "1d"],
  ])("when %d ms, then %j", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
