import { describe, expect, it } from "vitest";
import { failedPollBackoffMs } from "../../../src/app/firing/failure-backoff.js";

const INTERVAL = 5_000;

describe("failedPollBackoffMs", () => {
  it("when polls fail in a row, then the sleep starts at 100 ms and doubles with each failure", () => {
    const sleeps = [1, 2, 3, 4, 5, 6].map((failures) => failedPollBackoffMs(failures, INTERVAL));

    expect(sleeps).toEqual([100, 200, 400, 800, 1_600, 3_200]);
  });

  it("when the doubled sleep would pass the polling interval, then it is the polling interval", () => {
    expect(failedPollBackoffMs(7, INTERVAL)).toBe(INTERVAL);
    expect(failedPollBackoffMs(1_000_000, INTERVAL)).toBe(INTERVAL);
    expect(failedPollBackoffMs(1, 10)).toBe(10);
  });

  it("when the polling interval is the longest allowed (1 h), then the sleep still reaches it and stays finite", () => {
    const hour = 3_600_000;

    expect(failedPollBackoffMs(16, hour)).toBe(100 * 2 ** 15);
    expect(failedPollBackoffMs(17, hour)).toBe(hour);
    expect(failedPollBackoffMs(Number.MAX_SAFE_INTEGER, hour)).toBe(hour);
  });
});
