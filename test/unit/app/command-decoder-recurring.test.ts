/** CommandDecoder: the fields of CONTRACT §10 (repeat, maxLatenessMs, CancelTimersByPrefix). */
import { describe, expect, it } from "vitest";
import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";
import { CommandDecoder, type DecodedCommand } from "../../../src/app/commands/command-decoder.js";
import { rawCommand } from "../../support/fakes/command-messages.js";
import { FakeClock, T0 } from "../../support/fakes/fake-clock.js";

const decoder = new CommandDecoder({
  subjectPrefix: "timer",
  maxHorizonDays: 3650,
  maxClockSkewMs: 86_400_000,
  clock: new FakeClock(T0),
  calendar: new CronerCalendar(),
});
const DUE = "2026-01-05T08:00:00Z";

function schedule(payload: Record<string, unknown>): DecodedCommand {
  const body = {
    id: "m1",
    type: "ScheduleTimer",
    tenantId: "acme",
    timestampMs: 7,
    payload: { tenantId: "acme", serviceCallId: "c1", dueAt: DUE, ...payload },
  };
  return decoder.decode(rawCommand("timer.commands.schedule.acme", body));
}

function rejection(result: DecodedCommand): { code: string; reason: string } {
  if (result.ok) throw new Error("accepted");
  return { code: result.rejection.code, reason: result.rejection.reason };
}

function command(result: DecodedCommand) {
  if (!result.ok) throw new Error(`rejected: ${result.rejection.reason}`);
  return result.command;
}

describe("CommandDecoder: repeat and maxLatenessMs", () => {
  it("when repeat.everyMs is given, then the rule starts at dueAt", () => {
    expect(command(schedule({ repeat: { everyMs: 5_000, maxOccurrences: 3, until: "2026-01-06T00:00:00+01:00" } }))).toMatchObject({
      dueAtMs: Date.parse(DUE),
      repeat: { everyMs: 5_000, untilMs: Date.parse("2026-01-05T23:00:00Z"), maxOccurrences: 3, firstDueAtMs: Date.parse(DUE) },
      maxLatenessMs: null,
    });
  });

  it("when repeat.cron is given, then the first occurrence is the first cron time at or after dueAt, in the zone (default UTC)", () => {
    expect(command(schedule({ repeat: { cron: "0 9 * * MON-FRI", timezone: "Europe/Berlin" } }))).toMatchObject({
      dueAtMs: Date.parse("2026-01-05T08:00:00Z"),
      repeat: { cron: "0 9 * * MON-FRI", timezone: "Europe/Berlin", firstDueAtMs: Date.parse("2026-01-05T08:00:00Z") },
    });
    expect(command(schedule({ repeat: { cron: "0 9 * * *" } }))).toMatchObject({
      dueAtMs: Date.parse("2026-01-05T09:00:00Z"),
      repeat: { timezone: "UTC" },
    });
  });

  it("when maxLatenessMs is 0 or more, then it is kept; null repeat and maxLatenessMs count as absent", () => {
    expect(command(schedule({ maxLatenessMs: 0 }))).toMatchObject({ maxLatenessMs: 0, repeat: null });
    expect(command(schedule({ maxLatenessMs: null, repeat: null }))).toMatchObject({ maxLatenessMs: null, repeat: null });
  });

  it.each([
    [{ repeat: { everyMs: 999 } }, "payload.repeat.everyMs: must be at least 1000"],
    [{ repeat: { everyMs: 1500.5 } }, "payload.repeat.everyMs: must be an integer"],
    [{ repeat: { everyMs: "5000" } }, "payload.repeat.everyMs:"],
    [{ repeat: {} }, "payload.repeat: needs exactly one of everyMs and cron"],
    [{ repeat: { everyMs: 5_000, cron: "* * * * *" } }, "payload.repeat: needs exactly one of everyMs and cron"],
    [{ repeat: { everyMs: 5_000, timezone: "UTC" } }, "payload.repeat.timezone: only with cron"],
    [{ repeat: { cron: "0 9 * *" } }, "payload.repeat.cron: needs 5 fields"],
    [{ repeat: { cron: "0 0 9 * * *" } }, "payload.repeat.cron: needs 5 fields"],
    [{ repeat: { cron: "@daily" } }, "payload.repeat.cron: needs 5 fields"],
    [{ repeat: { cron: "61 9 * * *" } }, "payload.repeat.cron:"],
    [{ repeat: { cron: "0 9 31 2 *" } }, "payload.repeat.cron: has no occurrence at or after dueAt"],
    [{ repeat: { cron: 9 } }, "payload.repeat.cron:"],
    [{ repeat: { cron: "0 9 * * *", timezone: "Mars/Olympus_Mons" } }, "payload.repeat.timezone:"],
    [{ repeat: { cron: "0 9 * * *", timezone: "" } }, "payload.repeat.timezone:"],
    [{ repeat: { everyMs: 5_000, until: "2026-01-06T00:00:00" } }, "payload.repeat.until: not an ISO 8601 date-time with an offset"],
    [{ repeat: { everyMs: 5_000, until: "2026-02-30T00:00:00Z" } }, 'payload.repeat.until "2026-02-30T00:00:00Z": no such date'],
    [{ repeat: { everyMs: 5_000, until: "2026-01-05T07:00:00Z" } }, "payload.repeat.until: before the first occurrence"],
    [{ repeat: { everyMs: 5_000, maxOccurrences: 0 } }, "payload.repeat.maxOccurrences: must be at least 1"],
    [{ repeat: { everyMs: 5_000, maxOccurrences: 1.5 } }, "payload.repeat.maxOccurrences: must be an integer"],
    [{ repeat: "5m" }, "payload.repeat:"],
    [{ maxLatenessMs: -1 }, "payload.maxLatenessMs: must be at least 0"],
    [{ maxLatenessMs: 0.5 }, "payload.maxLatenessMs: must be an integer"],
    [{ maxLatenessMs: "30s" }, "payload.maxLatenessMs:"],
  ])("when the payload has %j, then INVALID_FIELD names the field", (fields, reason) => {
    const result = rejection(schedule(fields));
    expect(result.code).toBe("INVALID_FIELD");
    expect(result.reason.startsWith(reason), result.reason).toBe(true);
  });

  it("when repeat is malformed and the tenants differ, then INVALID_FIELD comes first (rule 5 before 6)", () => {
    const body = { tenantId: "other", serviceCallId: "c1", dueAt: DUE, repeat: { everyMs: 1 } };
    expect(rejection(decoder.decode(rawCommand("timer.commands.schedule.acme", body))).code).toBe("INVALID_FIELD");
  });

  it("when a cron rule's first occurrence is beyond the horizon, then DUE_TOO_FAR", () => {
    const short = new CommandDecoder({
      subjectPrefix: "timer",
      maxHorizonDays: 1,
      maxClockSkewMs: 86_400_000,
      clock: new FakeClock(Date.parse("2026-01-05T00:00:00Z")),
      calendar: new CronerCalendar(),
    });
    const body = { tenantId: "acme", serviceCallId: "c1", dueAt: DUE, repeat: { cron: "0 0 1 6 *" } };
    expect(rejection(short.decode(rawCommand("timer.commands.schedule.acme", body))).code).toBe("DUE_TOO_FAR");
  });
});

describe("CommandDecoder: CancelTimersByPrefix", () => {
  const subject = "timer.commands.cancelprefix.acme";

  it("when an envelope is valid, then it becomes a cancelPrefix command", () => {
    const body = {
      id: "m1",
      type: "CancelTimersByPrefix",
      tenantId: "acme",
      correlationId: "c",
      timestampMs: 9,
      payload: { tenantId: "acme", serviceCallIdPrefix: "order-4711:" },
    };
    expect(decoder.decode(rawCommand(subject, body))).toEqual({
      ok: true,
      refusal: expect.any(Function),
      commandId: expect.any(String),
      type: "CancelTimersByPrefix",
      command: { kind: "cancelPrefix", tenantId: "acme", serviceCallIdPrefix: "order-4711:", correlationId: "c", timestampMs: 9 },
      trace: expect.objectContaining({ traceId: expect.stringMatching(/^[0-9a-f]{32}$/) }),
    });
  });

  it("when a bare payload arrives, then its timestamp is the broker's", () => {
    const result = decoder.decode(rawCommand(subject, { tenantId: "acme", serviceCallIdPrefix: "x" }, { brokerTimestampMs: 42 }));
    expect(command(result)).toMatchObject({ kind: "cancelPrefix", timestampMs: 42 });
  });

  it.each([
    [{ tenantId: "acme" }, "payload.serviceCallIdPrefix:"],
    [{ tenantId: "acme", serviceCallIdPrefix: "" }, "payload.serviceCallIdPrefix:"],
    [{ tenantId: "acme", serviceCallIdPrefix: "x".repeat(257) }, "payload.serviceCallIdPrefix:"],
    [{ tenantId: "acme", serviceCallIdPrefix: "a\u0000b" }, "payload.serviceCallIdPrefix:"],
  ])("when the payload is %j, then INVALID_FIELD names serviceCallIdPrefix", (payload, reason) => {
    const result = rejection(decoder.decode(rawCommand(subject, payload)));
    expect(result).toMatchObject({ code: "INVALID_FIELD" });
    expect(result.reason.startsWith(reason), result.reason).toBe(true);
  });

  it("when the envelope type does not match the subject, then UNKNOWN_TYPE", () => {
    const body = {
      id: "m1",
      type: "CancelTimer",
      tenantId: "acme",
      timestampMs: 9,
      payload: { tenantId: "acme", serviceCallIdPrefix: "x" },
    };
    expect(rejection(decoder.decode(rawCommand(subject, body))).code).toBe("UNKNOWN_TYPE");
  });

  it("when the payload names another tenant, then TENANT_MISMATCH", () => {
    expect(rejection(decoder.decode(rawCommand(subject, { tenantId: "globex", serviceCallIdPrefix: "x" }))).code).toBe("TENANT_MISMATCH");
  });
});
