import { describe, expect, it } from "vitest";
import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";
import { CommandDecoder } from "../../../src/app/commands/command-decoder.js";
import { FakeClock, T0 } from "../../support/fakes/fake-clock.js";
import { rawCommand } from "../../support/fakes/command-messages.js";

// Passed as a variable, not a literal: an option the decoder does not take yet is no type error.
const options = {
  subjectPrefix: "timer",
  maxHorizonDays: 3650,
  maxClockSkewMs: 86_400_000,
  clock: new FakeClock(T0),
  calendar: new CronerCalendar(),
};
const decoder = new CommandDecoder(options);

describe("CommandDecoder: RetryTimer (CONTRACT §14)", () => {
  it("when an envelope arrives on the retry subject, then it is a retry command with the envelope's timestamp", () => {
    const body = {
      id: "r1",
      type: "RetryTimer",
      tenantId: "acme",
      correlationId: "op",
      timestampMs: 42,
      payload: { tenantId: "acme", serviceCallId: "s" },
    };

    const result = decoder.decode(rawCommand("timer.commands.retry.acme", body));

    expect(result).toEqual({
      ok: true,
      refusal: expect.any(Function),
      commandId: expect.any(String),
      type: "RetryTimer",
      command: { kind: "retry", tenantId: "acme", serviceCallId: "s", correlationId: "op", timestampMs: 42, trace: expect.anything() },
      trace: expect.objectContaining({ traceId: expect.stringMatching(/^[0-9a-f]{32}$/) }),
    });
  });

  it("when a bare payload arrives, then the broker's timestamp is the command's", () => {
    const result = decoder.decode(
      rawCommand("timer.commands.retry.acme", { tenantId: "acme", serviceCallId: "s" }, { brokerTimestampMs: 7 }),
    );

    expect(result.ok && result.command).toMatchObject({ kind: "retry", timestampMs: 7 });
  });

  it.each([
    ["timer.commands.retry.acme", { type: "CancelTimer", payload: { tenantId: "acme", serviceCallId: "s" } }, "UNKNOWN_TYPE"],
    ["timer.commands.retry.acme", { type: "RetryTimer", payload: { tenantId: "acme" } }, "INVALID_FIELD"],
    ["timer.commands.retry.acme", { type: "RetryTimer", payload: { tenantId: "acme", serviceCallId: "a\u0000b" } }, "INVALID_FIELD"],
    ["timer.commands.retry.acme", { type: "RetryTimer", payload: { tenantId: "globex", serviceCallId: "s" } }, "TENANT_MISMATCH"],
  ])("when %s carries %j, then it is rejected with %s", (subject, fields, code) => {
    const result = decoder.decode(rawCommand(subject, { id: "r1", tenantId: "acme", timestampMs: 1, ...fields }));

    expect(result.ok ? "accepted" : result.rejection.code).toBe(code);
    expect(result.type).toBe("RetryTimer");
  });
});
