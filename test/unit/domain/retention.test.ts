import { describe, expect, it } from "vitest";
import { isBeyondRetention, retentionCutoffMs } from "../../../src/domain/retention.js";

describe("retention rules", () => {
  const now = 1_764_108_000_000;
  const hour = 3_600_000;

  it("when retention is 0, then nothing is too old and nothing is deleted", () => {
    expect(retentionCutoffMs(now, 0)).toBeUndefined();
    expect(isBeyondRetention(0, now, 0)).toBe(false);
  });

  it("when a command is older than now − retention, then it is beyond retention; at the cutoff it is not", () => {
    expect(isBeyondRetention(now - hour - 1, now, hour)).toBe(true);
    expect(isBeyondRetention(now - hour, now, hour)).toBe(false);
    expect(isBeyondRetention(now + 5, now, hour)).toBe(false);
    expect(retentionCutoffMs(now, hour)).toBe(now - hour);
  });
});
