import { describe, expect, it } from "vitest";
import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";
import { CommandDecoder, type DecodedCommand } from "../../../src/app/commands/command-decoder.js";
import { FakeClock, T0 } from "../../support/fakes/fake-clock.js";
import { rawCommand } from "../../support/fakes/command-messages.js";

const decoder = new CommandDecoder({
  subjectPrefix: "timer",
  maxHorizonDays: 3650,
  maxClockSkewMs: 86_400_000,
  clock: new FakeClock(T0),
  calendar: new CronerCalendar(),
});
const DUE = "2026-01-01T00:00:00.000Z";

function decode(kind: string, type: string, payload: Record<string, unknown>, tenantId = "acme"): DecodedCommand {
  const body = { id: "c1", type, tenantId, timestampMs: 42, payload: { tenantId, ...payload } };
  return decoder.decode(rawCommand(`timer.commands.${kind}.acme`, body));
}
const schedule = (payload: Record<string, unknown>) => decode("schedule", "ScheduleTimer", { serviceCallId: "s", dueAt: DUE, ...payload });
const reason = (result: DecodedCommand) =>
  result.ok ? `accepted ${JSON.stringify(result.command)}` : `${result.rejection.code} ${result.rejection.reason}`;

describe("CommandDecoder: ScheduleTimer delivery and audit members (CONTRACT §11)", () => {
  it("when delivery has only maxRetries, then the defaults fill backoffMs and completionTimeoutMs", () => {
    const result = schedule({ delivery: { maxRetries: 3 }, createdBy: "alice", createdVia: "api" });
    expect(result.ok && result.command).toMatchObject({
      kind: "schedule",
      delivery: { maxRetries: 3, backoffMs: 5_000, completionTimeoutMs: 300_000 },
      createdBy: "alice",
      createdVia: "api",
    });
  });

  it.each([
    [{ maxRetries: -1 }, "payload.delivery.maxRetries"],
    [{ maxRetries: 101 }, "payload.delivery.maxRetries"],
    [{ maxRetries: 1.5 }, "payload.delivery.maxRetries"],
    [{}, "payload.delivery.maxRetries"],
    [{ maxRetries: 1, backoffMs: 99 }, "payload.delivery.backoffMs"],
    [{ maxRetries: 1, completionTimeoutMs: 999 }, "payload.delivery.completionTimeoutMs"],
    ["often", "payload.delivery"],
  ])("when delivery is %j, then INVALID_FIELD names %s", (delivery, field) => {
    expect(reason(schedule({ delivery }))).toMatch(new RegExp(`^INVALID_FIELD ${field.replaceAll(".", "\\.")}`));
  });

  it("when delivery comes with repeat, then INVALID_FIELD names delivery", () => {
    expect(reason(schedule({ delivery: { maxRetries: 1 }, repeat: { everyMs: 60_000 } }))).toMatch(/^INVALID_FIELD payload\.delivery/);
  });

  it.each([
    ["createdBy", ""],
    ["createdBy", "x".repeat(129)],
    ["createdVia", 7],
  ])("when %s is %j, then INVALID_FIELD names it", (member, value) => {
    expect(reason(schedule({ [member]: value }))).toMatch(new RegExp(`^INVALID_FIELD payload\\.${member}`));
  });

  it("when the limits are met exactly, then the command is accepted", () => {
    const result = schedule({ delivery: { maxRetries: 100, backoffMs: 100, completionTimeoutMs: 1_000 }, createdBy: "é".repeat(128) });
    expect(result.ok).toBe(true);
  });
});

describe("CommandDecoder: TimerCompleted and TimerFailed (CONTRACT §11)", () => {
  it("when a TimerCompleted arrives on the complete subject, then it becomes a complete command", () => {
    const result = decode("complete", "TimerCompleted", { serviceCallId: "s", result: "ok" });
    expect(result).toMatchObject({
      ok: true,
      type: "TimerCompleted",
      command: { kind: "complete", tenantId: "acme", serviceCallId: "s", result: "ok", timestampMs: 42 },
    });
  });

  it("when a TimerCompleted has no result, then its result is null", () => {
    expect(decode("complete", "TimerCompleted", { serviceCallId: "s" })).toMatchObject({ ok: true, command: { result: null } });
  });

  it("when the result is over 1024 code points, then INVALID_FIELD names it", () => {
    expect(reason(decode("complete", "TimerCompleted", { serviceCallId: "s", result: "😀".repeat(1025) }))).toMatch(
      /^INVALID_FIELD payload\.result/,
    );
    expect(decode("complete", "TimerCompleted", { serviceCallId: "s", result: "😀".repeat(1024) }).ok).toBe(true);
  });

  it("when a TimerFailed arrives, then it becomes a fail command; without a reason it is INVALID_FIELD", () => {
    expect(decode("fail", "TimerFailed", { serviceCallId: "s", reason: "503" })).toMatchObject({
      ok: true,
      type: "TimerFailed",
      command: { kind: "fail", reason: "503" },
    });
    expect(reason(decode("fail", "TimerFailed", { serviceCallId: "s" }))).toMatch(/^INVALID_FIELD payload\.reason/);
  });

  it("when the envelope type does not match the subject, then UNKNOWN_TYPE", () => {
    expect(reason(decode("fail", "TimerCompleted", { serviceCallId: "s" }))).toMatch(/^UNKNOWN_TYPE/);
  });

  it("when the payload names another tenant, then TENANT_MISMATCH after the field checks", () => {
    const body = {
      id: "c1",
      type: "TimerFailed",
      tenantId: "acme",
      timestampMs: 1,
      payload: { tenantId: "other", serviceCallId: "s", reason: "x" },
    };
    const result = decoder.decode(rawCommand("timer.commands.fail.acme", body));
    expect(reason(result)).toMatch(/^TENANT_MISMATCH/);
  });

  it("when a bare report payload arrives, then its timestamp is the broker's", () => {
    const result = decoder.decode(
      rawCommand("timer.commands.complete.acme", { tenantId: "acme", serviceCallId: "s" }, { brokerTimestampMs: 777 }),
    );
    expect(result).toMatchObject({ ok: true, command: { timestampMs: 777 } });
  });
});
