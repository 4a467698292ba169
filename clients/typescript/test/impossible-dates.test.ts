/**
 * A date that does not exist is refused before anything is sent, naming the value and showing a
 * valid one (the service would otherwise reject it later, where the sender does not look).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../../../test/support/nats-server.js";
import { connectTimerClient, type TimerClient, TimerClientError } from "../src/index.js";
import { instantProblem } from "../src/instant-check.js";

let nats: NatsServerProcess;
let timers: TimerClient;

beforeAll(async () => {
  nats = await NatsServerProcess.start();
  timers = await connectTimerClient({ servers: nats.url, tenantId: "dates" });
});

afterAll(async () => {
  await timers?.close();
  await nats?.dispose();
});

const refusal = (promise: Promise<unknown>): Promise<TimerClientError> =>
  promise.then(
    () => {
      throw new Error("resolved, expected a refusal");
    },
    (error: unknown) => error as TimerClientError,
  );

describe("dates that do not exist", () => {
  it.each([
    ["2026-13-01T00:00:00Z", "there is no month 13"],
    ["2026-00-10T00:00:00Z", "there is no month 0"],
    ["2026-02-30T09:00:00Z", "February 2026 has 28 days, not 30"],
    ["2027-04-31T09:00:00+02:00", "April 2027 has 30 days, not 31"],
    ["2026-03-01T25:00:00Z", "there is no hour 25 (00 to 23)"],
    ["2026-03-01T09:60:00Z", "there is no minute 60 (00 to 59)"],
    ["2026-03-01T09:00:61Z", "there is no second 61 (00 to 59)"],
    ["2026-03-01T09:00:00+24:00", "the offset +24:00 is out of range"],
  ])("when dueAt is %s, then schedule throws INVALID_INPUT naming it, why, and a valid example", async (dueAt, why) => {
    const error = await refusal(timers.schedule({ serviceCallId: "x", dueAt }));
    expect(error).toBeInstanceOf(TimerClientError);
    expect(error.code).toBe("INVALID_INPUT");
    expect(error.detail).toBe(
      `/payload/dueAt: "${dueAt}" is not a date-time: ${why}; a valid value is an ISO 8601 date-time with an offset (Z or ±hh:mm), e.g. 2026-03-01T09:00:00Z or 2026-03-01T10:00:00+01:00`,
    );
    expect(error.message).toBe(`ScheduleTimer ${error.detail}`);
  });

  it("when the date exists (a leap day, the last second of a day), then nothing is wrong with it", () => {
    for (const valid of ["2028-02-29T09:00:00Z", "2000-02-29T00:00:00Z", "2026-12-31T23:59:59.999-01:30", "2026-03-01t09:00z"])
      expect(instantProblem(valid), valid).toBeUndefined();
    expect(instantProblem("2100-02-29T09:00:00Z")).toBe("February 2100 has 28 days, not 29");
    expect(instantProblem("2026-03-01T09:00:00")).toBe("it has no offset (Z or ±hh:mm)");
    expect(instantProblem("tomorow 9am")).toBe("it is not ISO 8601 (date, T, time and an offset)");
  });

  it("when repeat.until or a list bound does not exist, then the member is named", async () => {
    const until = await refusal(
      timers.schedule({ serviceCallId: "x", dueAt: "2026-03-01T09:00:00Z", repeat: { everyMs: 60_000, until: "2026-02-29T00:00:00Z" } }),
    );
    expect(until.detail).toMatch(/^\/payload\/repeat\/until: "2026-02-29T00:00:00Z" is not a date-time: February 2026 has 28 days/);
    const list = await refusal(timers.list({ dueBefore: "2026-06-31T00:00:00Z" }));
    expect(list.detail).toMatch(/^\/dueBefore: "2026-06-31T00:00:00Z" is not a date-time: June 2026 has 30 days, not 31/);
  });

  it("when a Date is invalid, then the message says what a valid value is", async () => {
    const error = await refusal(timers.schedule({ serviceCallId: "x", dueAt: new Date("2026-13-01") }));
    expect(error.detail).toMatch(
      /^\/payload\/dueAt: must be a valid Date or an ISO 8601 date-time with an offset .* e\.g\. 2026-03-01T09:00:00Z/,
    );
  });
});
