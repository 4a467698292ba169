import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient, type ReceivedEvent } from "../support/timer-client.js";
import { commandConsumersState } from "../support/command-consumers.js";
import {
  barrier,
  cancelEnvelope,
  commandsSeries,
  deltas,
  eventually,
  fromNow,
  manager,
  scheduleEnvelope,
  settledMetrics,
  uniqueId,
} from "./integration-support.js";

type CommandType = "ScheduleTimer" | "CancelTimer" | "unknown";

/** One malformed command and the CommandRejected it must produce. */
interface RejectionCase {
  readonly name: string;
  readonly subject: string;
  readonly body: string | Uint8Array;
  readonly code: string;
  /** The events subject's last token and the event's tenantId. */
  readonly tenant: string;
  /** The `type` label of timer_commands_received_total. */
  readonly type: CommandType;
  /** Expected echo: a value, `null` for "must be absent", undefined for "not checked". */
  readonly commandId?: string | null;
  readonly serviceCallId?: string | null;
  readonly correlationId?: string | null;
}

const PAST = "2020-01-01T00:00:00.000Z"; // a timer stored by mistake would fire at once
const HORIZON_DAYS = 1;
const DAY_MS = 86_400_000;
const EMOJI = "😀"; // one code point, two UTF-16 units, four UTF-8 bytes

/**
 * A valid ScheduleTimer (or CancelTimer) for `tenant`, broken by `overrides`. Its id, correlationId
 * and serviceCallId are unique, so the rejection's echo of them can be checked.
 */
function command(
  kind: "schedule" | "cancel",
  tenant: string,
  overrides: Record<string, unknown> = {},
  payloadOverrides: Record<string, unknown> = {},
) {
  const ids = { commandId: uniqueId("id"), correlationId: uniqueId("corr"), serviceCallId: uniqueId("call") };
  const base =
    kind === "schedule"
      ? scheduleEnvelope(tenant, ids.serviceCallId, PAST, { id: ids.commandId, correlationId: ids.correlationId }, { data: { n: 1 } })
      : cancelEnvelope(tenant, ids.serviceCallId, { id: ids.commandId, correlationId: ids.correlationId });
  const envelope: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) delete envelope[key];
    else envelope[key] = value;
  }
  const payload: Record<string, unknown> = { ...(base.payload as Record<string, unknown>) };
  for (const [key, value] of Object.entries(payloadOverrides)) {
    if (value === undefined) delete payload[key];
    else payload[key] = value;
  }
  if (!("payload" in overrides)) envelope.payload = payload;
  return { ...ids, envelope, payload, json: JSON.stringify(envelope) };
}

function subjectOf(kind: string, tenant: string): string {
  return `timer.commands.${kind}.${tenant}`;
}

/** CONTRACT §2 rejection table and §3.7: every code, the rule order, the echo, and no effect. */
describe("command rejection", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;
  let client: TimerClient;
  const allCases: RejectionCase[] = [];

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    // Retention off: the limit cases include timestampMs 0, which retention's stale-command rule
    // (CONTRACT §7) would otherwise ignore as older than the window.
    service = await TimerServiceProcess.start(nats.url, {
      TIMER_POLLING_INTERVAL: "200",
      TIMER_MAX_HORIZON_DAYS: String(HORIZON_DAYS),
      TIMER_RETENTION_HOURS: "0",
    });
    client = await TimerClient.connect(nats.url);
  });

  afterAll(async () => {
    await client?.close();
    await service?.dispose();
    await nats?.dispose();
  });

  /** Publishes the cases, then checks each rejection, the metrics, and that nothing was stored or retried. */
  async function expectRejected(cases: readonly RejectionCase[]): Promise<void> {
    allCases.push(...cases);
    expect(new Set(allCases.map((c) => c.subject)).size, "subjects must be unique per case").toBe(allCases.length);
    const before = await settledMetrics(service, client);
    for (const c of cases) await client.publishRaw(c.subject, c.body);

    const rejections = new Map<RejectionCase, ReceivedEvent>();
    for (const c of cases) rejections.set(c, await client.waitForRejection(c.subject, 5_000).catch(() => failNoRejection(c)));
    await barrier(client);

    for (const c of cases) {
      const label = `${c.name} (${c.subject})`;
      const event = rejections.get(c)!;
      const { body } = event;
      expect(
        client.received("CommandRejected").filter((e) => e.body.payload?.subject === c.subject),
        `${label}: exactly one rejection`,
      ).toHaveLength(1);
      expect(event.subject, label).toBe(`timer.events.rejected.${c.tenant}`);
      expect(body.type, label).toBe("CommandRejected");
      expect(body.tenantId, label).toBe(c.tenant);
      expect(typeof body.id, label).toBe("string");
      expect(Number.isInteger(body.timestampMs), label).toBe(true);
      expect(body.payload.code, label).toBe(c.code);
      expect(typeof body.payload.reason, label).toBe("string");
      expect(body.payload.reason.length, label).toBeGreaterThan(0);
      expect(body.payload.subject, label).toBe(c.subject);
      expect(
        Object.keys(body.payload).every((k) => ["code", "reason", "subject", "commandId", "serviceCallId"].includes(k)),
        label,
      ).toBe(true);
      expectEcho(label, "commandId", body.payload.commandId, c.commandId);
      expectEcho(label, "serviceCallId", body.payload.serviceCallId, c.serviceCallId);
      expectEcho(label, "correlationId", body.correlationId, c.correlationId);
    }

    // Logged at warn (stdout arrives asynchronously, hence the wait).
    await eventually(() => {
      const warnLines = service
        .logs()
        .filter((line) => line.level === "warn")
        .map((line) => JSON.stringify(line));
      const unlogged = cases.filter((c) => !warnLines.some((line) => line.includes(JSON.stringify(c.subject).slice(1, -1))));
      expect(
        unlogged.map((c) => c.name),
        "rejections without a warn log line",
      ).toEqual([]);
    }, 3_000);

    // Nothing was stored: no timer of these commands fired (they were all due in the past), none is pending.
    const callIds = new Set(cases.flatMap((c) => (typeof c.serviceCallId === "string" ? [c.serviceCallId] : [])));
    expect(client.received("DueTimeReached").filter((e) => callIds.has(e.body.payload?.serviceCallId))).toEqual([]);
    const after = await settledMetrics(service, client);
    const rejected = (type: CommandType) => cases.filter((c) => c.type === type).length;
    expect(
      deltas(before, after, [
        commandsSeries("ScheduleTimer", "rejected"),
        commandsSeries("CancelTimer", "rejected"),
        commandsSeries("unknown", "rejected"),
        commandsSeries("ScheduleTimer", "accepted"),
        commandsSeries("CancelTimer", "accepted"),
        "timer_schedules_pending",
      ]),
    ).toEqual({
      [commandsSeries("ScheduleTimer", "rejected")]: rejected("ScheduleTimer"),
      [commandsSeries("CancelTimer", "rejected")]: rejected("CancelTimer"),
      [commandsSeries("unknown", "rejected")]: rejected("unknown"),
      [commandsSeries("ScheduleTimer", "accepted")]: 1, // the barrier
      [commandsSeries("CancelTimer", "accepted")]: 0,
      timer_schedules_pending: 0,
    });

    // Settled for good (term), never redelivered.
    const jsm = await manager(client);
    await eventually(async () => {
      const { pending, ackPending, redelivered } = await commandConsumersState(jsm);
      expect({ pending, ackPending, redelivered }).toEqual({
        pending: 0,
        ackPending: 0,
        redelivered: 0,
      });
    });
  }

  it("when valid commands arrive while rejections are still being published, then every later command is still processed", async () => {
    // Each round: a few rejections (their publish acks take a moment), then a valid command right
    // behind them. A consumer that loses track of its drain loop stops taking commands after this.
    for (let round = 0; round < 15; round++) {
      for (let i = 0; i < 5; i++) await client.publishRaw(subjectOf("schedule", `interleave-${round}-${i}`), "x");
      const serviceCallId = uniqueId(`interleave-${round}`);
      await client.schedule("interleave", serviceCallId, fromNow(0));
      await client.waitForDue("interleave", serviceCallId, 5_000).catch(() => {
        throw new Error(`round ${round}: the valid command behind the rejections was not processed within 5 s`);
      });
    }
    await barrier(client, "interleave-after");
  });

  it("when a body is over 64 KiB or data is over 16384 UTF-8 bytes, then TOO_LARGE (rule 1 before INVALID_JSON, rule 7 after TENANT_MISMATCH and before DUE_TOO_FAR)", async () => {
    const bigBody = command("schedule", "big-body", {}, { data: "x".repeat(70_000) });
    const bigData = command("schedule", "big-data", {}, { data: "é".repeat(8_192) }); // 16386 bytes as JSON, 8194 characters
    const bigDataFar = command("schedule", "big-data-far", {}, { data: "é".repeat(8_192), dueAt: fromNow(2 * DAY_MS) });
    const bigDataMismatch = command("schedule", "big-data-mismatch", {}, { data: "x".repeat(16_383), tenantId: "someone-else" });
    const bigCancel = command("cancel", "big-cancel", { padding: "y".repeat(66_000) });
    await expectRejected([
      {
        name: "body over 64 KiB",
        subject: subjectOf("schedule", "big-body"),
        body: bigBody.json,
        code: "TOO_LARGE",
        tenant: "big-body",
        type: "ScheduleTimer",
      },
      {
        name: "65537 bytes of junk",
        subject: subjectOf("schedule", "big-junk"),
        body: "x".repeat(65_537),
        code: "TOO_LARGE",
        tenant: "big-junk",
        type: "ScheduleTimer",
        commandId: null,
        serviceCallId: null,
        correlationId: null,
      },
      {
        name: "cancel over 64 KiB",
        subject: subjectOf("cancel", "big-cancel"),
        body: bigCancel.json,
        code: "TOO_LARGE",
        tenant: "big-cancel",
        type: "CancelTimer",
      },
      {
        name: "over 64 KiB on a 3-token subject",
        subject: "timer.commands.cancel",
        body: "x".repeat(65_537),
        code: "TOO_LARGE",
        tenant: "_unknown",
        type: "CancelTimer",
      },
      {
        name: "data over 16384 bytes",
        subject: subjectOf("schedule", "big-data"),
        body: bigData.json,
        code: "TOO_LARGE",
        tenant: "big-data",
        type: "ScheduleTimer",
        ...echo(bigData),
      },
      {
        name: "data too large beats DUE_TOO_FAR",
        subject: subjectOf("schedule", "big-data-far"),
        body: bigDataFar.json,
        code: "TOO_LARGE",
        tenant: "big-data-far",
        type: "ScheduleTimer",
        ...echo(bigDataFar),
      },
      {
        name: "TENANT_MISMATCH beats data too large",
        subject: subjectOf("schedule", "big-data-mismatch"),
        body: bigDataMismatch.json,
        code: "TENANT_MISMATCH",
        tenant: "big-data-mismatch",
        type: "ScheduleTimer",
        ...echo(bigDataMismatch),
      },
    ]);
  });

  it("when a body is not UTF-8 JSON, then INVALID_JSON, with nothing echoed", async () => {
    const invalidUtf8 = new Uint8Array([
      ...new TextEncoder().encode('{"id":"x","payload":{"serviceCallId":"'),
      0xff,
      0xfe,
      ...new TextEncoder().encode('"}}'),
    ]);
    const none = { commandId: null, serviceCallId: null, correlationId: null } as const;
    await expectRejected([
      {
        name: "not JSON",
        subject: subjectOf("schedule", "not-json"),
        body: "not json {",
        code: "INVALID_JSON",
        tenant: "not-json",
        type: "ScheduleTimer",
        ...none,
      },
      {
        name: "invalid UTF-8 bytes",
        subject: subjectOf("schedule", "bad-utf8"),
        body: invalidUtf8,
        code: "INVALID_JSON",
        tenant: "bad-utf8",
        type: "ScheduleTimer",
        ...none,
      },
      {
        name: "empty body",
        subject: subjectOf("cancel", "empty-body"),
        body: "",
        code: "INVALID_JSON",
        tenant: "empty-body",
        type: "CancelTimer",
        ...none,
      },
      {
        name: "truncated JSON",
        subject: subjectOf("cancel", "truncated"),
        body: '{"id":"a","payload":{',
        code: "INVALID_JSON",
        tenant: "truncated",
        type: "CancelTimer",
        ...none,
      },
      {
        name: "exactly 64 KiB of junk is not too large",
        subject: subjectOf("schedule", "exact-64k"),
        body: "x".repeat(65_536),
        code: "INVALID_JSON",
        tenant: "exact-64k",
        type: "ScheduleTimer",
        ...none,
      },
      {
        name: "not JSON on a 3-token subject",
        subject: "timer.commands.bar",
        body: "nope",
        code: "INVALID_JSON",
        tenant: "_unknown",
        type: "unknown",
        ...none,
      },
      {
        name: "not JSON with an unknown kind",
        subject: subjectOf("foo", "json-foo"),
        body: "nope",
        code: "INVALID_JSON",
        tenant: "json-foo",
        type: "unknown",
        ...none,
      },
    ]);
  });

  it("when the body is not an object, an envelope member is missing or out of range, or the subject has no valid tenant token, then INVALID_ENVELOPE", async () => {
    const cases: RejectionCase[] = [];
    const add = (
      name: string,
      kind: "schedule" | "cancel",
      tenant: string,
      broken: ReturnType<typeof command>,
      expected: Partial<RejectionCase> = {},
    ) =>
      cases.push({
        name,
        subject: subjectOf(kind, tenant),
        body: broken.json,
        code: "INVALID_ENVELOPE",
        tenant,
        type: kind === "schedule" ? "ScheduleTimer" : "CancelTimer",
        ...echo(broken),
        ...expected,
      });
    const none = { commandId: null, serviceCallId: null, correlationId: null } as const;
    for (const [name, body] of [
      ["array", '[{"payload":{}}]'],
      ["number", "42"],
      ["null", "null"],
      ["string", '"text"'],
      ["boolean", "true"],
    ] as const) {
      cases.push({
        name: `a JSON ${name}`,
        subject: subjectOf("schedule", `env-${name}`),
        body,
        code: "INVALID_ENVELOPE",
        tenant: `env-${name}`,
        type: "ScheduleTimer",
        ...none,
      });
    }
    add("id missing", "schedule", "id-missing", command("schedule", "id-missing", { id: undefined }), { commandId: null });
    add("id of 129 code points", "schedule", "id-129", command("schedule", "id-129", { id: EMOJI.repeat(129) }), { commandId: null });
    add("id empty", "schedule", "id-empty", command("schedule", "id-empty", { id: "" }), { commandId: null });
    add("id a number", "cancel", "id-number", command("cancel", "id-number", { id: 7 }), { commandId: null });
    add("type missing", "schedule", "type-missing", command("schedule", "type-missing", { type: undefined }));
    add("tenantId missing", "schedule", "env-tenant-missing", command("schedule", "env-tenant-missing", { tenantId: undefined }));
    add("envelope tenantId invalid", "schedule", "env-tenant-bad", command("schedule", "env-tenant-bad", { tenantId: "bad!" }));
    add("timestampMs missing", "schedule", "ts-missing", command("schedule", "ts-missing", { timestampMs: undefined }));
    add("timestampMs negative", "schedule", "ts-negative", command("schedule", "ts-negative", { timestampMs: -1 }));
    add("timestampMs a float", "cancel", "ts-float", command("cancel", "ts-float", { timestampMs: 1.5 }));
    add("timestampMs a string", "schedule", "ts-string", command("schedule", "ts-string", { timestampMs: "1764108000000" }));
    add("correlationId empty", "schedule", "corr-empty", command("schedule", "corr-empty", { correlationId: "" }), { correlationId: null });
    add("correlationId of 129 code points", "cancel", "corr-129", command("cancel", "corr-129", { correlationId: EMOJI.repeat(129) }), {
      correlationId: null,
    });
    add("correlationId a number", "schedule", "corr-number", command("schedule", "corr-number", { correlationId: 42 }), {
      correlationId: null,
    });
    add("payload a string", "schedule", "payload-string", command("schedule", "payload-string", { payload: "x" }), { serviceCallId: null });
    add("payload null", "cancel", "payload-null", command("cancel", "payload-null", { payload: null }), { serviceCallId: null });
    // Rule 3 before rule 4: a bad envelope member wins over a wrong type.
    add(
      "bad timestampMs beats wrong type",
      "schedule",
      "ts-before-type",
      command("schedule", "ts-before-type", { timestampMs: -5, type: "CancelTimer" }),
    );

    // Subjects without a valid tenant token → `_unknown`.
    const threeTokens = command("schedule", "three");
    cases.push({
      name: "3-token subject",
      subject: "timer.commands.schedule",
      body: threeTokens.json,
      code: "INVALID_ENVELOPE",
      tenant: "_unknown",
      type: "ScheduleTimer",
      ...echo(threeTokens),
    });
    const fiveTokens = command("schedule", "five");
    cases.push({
      name: "5-token subject",
      subject: "timer.commands.schedule.five.tokens",
      body: fiveTokens.json,
      code: "INVALID_ENVELOPE",
      tenant: "_unknown",
      type: "ScheduleTimer",
      ...echo(fiveTokens),
    });
    const badTenant = command("schedule", "bad!");
    cases.push({
      name: "subject tenant bad!",
      subject: "timer.commands.schedule.bad!",
      body: badTenant.json,
      code: "INVALID_ENVELOPE",
      tenant: "_unknown",
      type: "ScheduleTimer",
      ...echo(badTenant),
    });
    const longTenant = command("cancel", "t".repeat(65));
    cases.push({
      name: "subject tenant of 65 characters",
      subject: subjectOf("cancel", "t".repeat(65)),
      body: longTenant.json,
      code: "INVALID_ENVELOPE",
      tenant: "_unknown",
      type: "CancelTimer",
      ...echo(longTenant),
    });
    const reserved = command("schedule", "_unknown");
    cases.push({
      name: "subject tenant _unknown",
      subject: subjectOf("schedule", "_unknown"),
      body: reserved.json,
      code: "INVALID_ENVELOPE",
      tenant: "_unknown",
      type: "ScheduleTimer",
      ...echo(reserved),
    });
    const badTenantUnknownKind = command("schedule", "bad!");
    cases.push({
      name: "invalid tenant token beats unknown kind",
      subject: "timer.commands.foo.bad!",
      body: badTenantUnknownKind.json,
      code: "INVALID_ENVELOPE",
      tenant: "_unknown",
      type: "unknown",
      ...echo(badTenantUnknownKind),
    });
    const bareFive = command("schedule", "bare");
    cases.push({
      name: "bare payload on a 5-token subject",
      subject: "timer.commands.cancel.bare.five",
      body: JSON.stringify(bareFive.payload),
      code: "INVALID_ENVELOPE",
      tenant: "_unknown",
      type: "CancelTimer",
      commandId: null,
      correlationId: null,
      serviceCallId: bareFive.serviceCallId,
    });
    await expectRejected(cases);
  });

  it("when the subject's kind is not a command or the envelope type is not the subject's command, then UNKNOWN_TYPE", async () => {
    const cases: RejectionCase[] = [];
    const add = (
      name: string,
      kind: string,
      tenant: string,
      broken: ReturnType<typeof command>,
      type: CommandType,
      expected: Partial<RejectionCase> = {},
    ) =>
      cases.push({
        name,
        subject: subjectOf(kind, tenant),
        body: broken.json,
        code: "UNKNOWN_TYPE",
        tenant,
        type,
        ...echo(broken),
        ...expected,
      });
    add("kind foo", "foo", "kind-foo", command("schedule", "kind-foo"), "unknown");
    add("kind Schedule (case matters)", "Schedule", "kind-case", command("schedule", "kind-case"), "unknown");
    const bare = command("schedule", "kind-foo-bare");
    cases.push({
      name: "bare payload with kind foo",
      subject: subjectOf("foo", "kind-foo-bare"),
      body: JSON.stringify(bare.payload),
      code: "UNKNOWN_TYPE",
      tenant: "kind-foo-bare",
      type: "unknown",
      commandId: null,
      correlationId: null,
      serviceCallId: bare.serviceCallId,
    });
    add(
      "CancelTimer on the schedule subject",
      "schedule",
      "type-cancel",
      command("schedule", "type-cancel", { type: "CancelTimer" }),
      "ScheduleTimer",
    );
    add(
      "ScheduleTimer on the cancel subject",
      "cancel",
      "type-schedule",
      command("cancel", "type-schedule", { type: "ScheduleTimer" }),
      "CancelTimer",
    );
    add(
      "DueTimeReached on the schedule subject",
      "schedule",
      "type-due",
      command("schedule", "type-due", { type: "DueTimeReached" }),
      "ScheduleTimer",
    );
    add(
      "CommandRejected on the cancel subject",
      "cancel",
      "type-rejected",
      command("cancel", "type-rejected", { type: "CommandRejected" }),
      "CancelTimer",
    );
    add("type in lower case", "schedule", "type-lower", command("schedule", "type-lower", { type: "scheduletimer" }), "ScheduleTimer");
    // Rule 4 before rule 5: a wrong type wins over a broken payload.
    add(
      "wrong type beats missing serviceCallId",
      "schedule",
      "type-before-field",
      command("schedule", "type-before-field", { type: "CancelTimer" }, { serviceCallId: undefined }),
      "ScheduleTimer",
      { serviceCallId: null },
    );
    await expectRejected(cases);
  });

  it("when a payload field is missing or malformed, then INVALID_FIELD", async () => {
    const cases: RejectionCase[] = [];
    const add = (
      name: string,
      kind: "schedule" | "cancel",
      tenant: string,
      payloadOverrides: Record<string, unknown>,
      expected: Partial<RejectionCase> = {},
    ) => {
      const broken = command(kind, tenant, {}, payloadOverrides);
      cases.push({
        name,
        subject: subjectOf(kind, tenant),
        body: broken.json,
        code: "INVALID_FIELD",
        tenant,
        type: kind === "schedule" ? "ScheduleTimer" : "CancelTimer",
        ...echo(broken),
        ...expected,
      });
    };
    add("serviceCallId missing", "schedule", "sc-missing", { serviceCallId: undefined }, { serviceCallId: null });
    add("serviceCallId empty", "schedule", "sc-empty", { serviceCallId: "" }, { serviceCallId: null });
    add("serviceCallId a number", "cancel", "sc-number", { serviceCallId: 12 }, { serviceCallId: null });
    add("serviceCallId with a C0 control character", "schedule", "sc-c0", { serviceCallId: "bell\u0007" }, { serviceCallId: null });
    add("serviceCallId with DEL", "cancel", "sc-del", { serviceCallId: "del\u007f" }, { serviceCallId: null });
    add("serviceCallId with a C1 control character", "schedule", "sc-c1", { serviceCallId: "nel\u0085" }, { serviceCallId: null });
    add("serviceCallId with a newline", "schedule", "sc-newline", { serviceCallId: "a\nb" }, { serviceCallId: null });
    add("serviceCallId of 257 code points", "schedule", "sc-257", { serviceCallId: EMOJI.repeat(257) }, { serviceCallId: null });
    add("dueAt missing", "schedule", "due-missing", { dueAt: undefined });
    add("dueAt without offset", "schedule", "due-no-offset", { dueAt: "2026-01-01T00:00:00" });
    add("dueAt February 30", "schedule", "due-feb30", { dueAt: "2026-02-30T00:00:00Z" });
    add("dueAt month 13", "schedule", "due-month13", { dueAt: "2026-13-01T00:00:00Z" });
    add("dueAt date only", "schedule", "due-date-only", { dueAt: "2026-01-01" });
    add("dueAt a number", "schedule", "due-number", { dueAt: 1764108000000 });
    add("dueAt natural language", "schedule", "due-words", { dueAt: "tomorrow 9am" });
    add("payload tenantId invalid", "schedule", "pt-invalid", { tenantId: "bad!" });
    add("payload tenantId missing", "cancel", "pt-missing", { tenantId: undefined });
    add("payload tenantId _unknown", "schedule", "pt-reserved", { tenantId: "_unknown" });
    // A cron the calendar cannot evaluate from that dueAt (it overflows croner's stack) is answered on
    // the sender's own subject, like any other rule without an occurrence.
    add("cron with no computable occurrence from year 1", "schedule", "cron-uncomputable", {
      dueAt: "0001-01-01T00:00:00Z",
      repeat: { cron: "0 0 31W 2 *" },
    });
    add("cron that never matches", "schedule", "cron-never", { repeat: { cron: "0 0 31W 2 *", timezone: "America/Santiago" } });
    // Rule 5 before rule 6: a malformed field wins over another (valid) tenant.
    add("bad dueAt beats tenant mismatch", "schedule", "field-before-tenant", { tenantId: "someone-else", dueAt: "soon" });
    const bare = command("schedule", "bare-bad-due", {}, { dueAt: "2026-01-01 10:00" });
    cases.push({
      name: "bare payload with a bad dueAt",
      subject: subjectOf("schedule", "bare-bad-due"),
      body: JSON.stringify(bare.payload),
      code: "INVALID_FIELD",
      tenant: "bare-bad-due",
      type: "ScheduleTimer",
      commandId: null,
      correlationId: null,
      serviceCallId: bare.serviceCallId,
    });
    await expectRejected(cases);
  });

  it("when subject, envelope and payload name different tenants, then TENANT_MISMATCH on the subject's tenant", async () => {
    const envelopeOther = command("schedule", "tm-envelope", { tenantId: "other" });
    const payloadOther = command("schedule", "tm-payload", {}, { tenantId: "other" });
    const cancelOther = command("cancel", "tm-cancel", {}, { tenantId: "other" });
    const bareOther = command("schedule", "tm-bare", {}, { tenantId: "other" });
    const beatsFar = command("schedule", "tm-far", { tenantId: "other" }, { dueAt: fromNow(3 * DAY_MS) });
    await expectRejected([
      {
        name: "envelope vs subject",
        subject: subjectOf("schedule", "tm-envelope"),
        body: envelopeOther.json,
        code: "TENANT_MISMATCH",
        tenant: "tm-envelope",
        type: "ScheduleTimer",
        ...echo(envelopeOther),
      },
      {
        name: "payload vs subject",
        subject: subjectOf("schedule", "tm-payload"),
        body: payloadOther.json,
        code: "TENANT_MISMATCH",
        tenant: "tm-payload",
        type: "ScheduleTimer",
        ...echo(payloadOther),
      },
      {
        name: "cancel payload vs subject",
        subject: subjectOf("cancel", "tm-cancel"),
        body: cancelOther.json,
        code: "TENANT_MISMATCH",
        tenant: "tm-cancel",
        type: "CancelTimer",
        ...echo(cancelOther),
      },
      {
        name: "bare payload vs subject",
        subject: subjectOf("schedule", "tm-bare"),
        body: JSON.stringify(bareOther.payload),
        code: "TENANT_MISMATCH",
        tenant: "tm-bare",
        type: "ScheduleTimer",
        commandId: null,
        correlationId: null,
        serviceCallId: bareOther.serviceCallId,
      },
      {
        name: "mismatch beats DUE_TOO_FAR",
        subject: subjectOf("schedule", "tm-far"),
        body: beatsFar.json,
        code: "TENANT_MISMATCH",
        tenant: "tm-far",
        type: "ScheduleTimer",
        ...echo(beatsFar),
      },
    ]);
  });

  it(`when dueAt is beyond TIMER_MAX_HORIZON_DAYS (${HORIZON_DAYS}), then DUE_TOO_FAR`, async () => {
    const twoDays = command("schedule", "far-2d", {}, { dueAt: fromNow(2 * DAY_MS) });
    const justOver = command("schedule", "far-edge", {}, { dueAt: fromNow(DAY_MS + 60_000) });
    const year9999 = command("schedule", "far-9999", {}, { dueAt: "9999-12-31T23:59:59.999Z" });
    const bare = command("schedule", "far-bare", {}, { dueAt: fromNow(5 * DAY_MS) });
    await expectRejected([
      {
        name: "2 days ahead",
        subject: subjectOf("schedule", "far-2d"),
        body: twoDays.json,
        code: "DUE_TOO_FAR",
        tenant: "far-2d",
        type: "ScheduleTimer",
        ...echo(twoDays),
      },
      {
        name: "1 day and 1 minute ahead",
        subject: subjectOf("schedule", "far-edge"),
        body: justOver.json,
        code: "DUE_TOO_FAR",
        tenant: "far-edge",
        type: "ScheduleTimer",
        ...echo(justOver),
      },
      {
        name: "year 9999",
        subject: subjectOf("schedule", "far-9999"),
        body: year9999.json,
        code: "DUE_TOO_FAR",
        tenant: "far-9999",
        type: "ScheduleTimer",
        ...echo(year9999),
      },
      {
        name: "bare payload too far",
        subject: subjectOf("schedule", "far-bare"),
        body: JSON.stringify(bare.payload),
        code: "DUE_TOO_FAR",
        tenant: "far-bare",
        type: "ScheduleTimer",
        commandId: null,
        correlationId: null,
        serviceCallId: bare.serviceCallId,
      },
    ]);
  });

  it("when fields are exactly at their limits, then the command is accepted (not rejected)", async () => {
    const tenant = "t".repeat(64);
    const accepted = [
      command("schedule", tenant, { id: EMOJI.repeat(128), correlationId: EMOJI.repeat(128) }, { serviceCallId: `${EMOJI.repeat(255)}x` }),
      command("schedule", tenant, { timestampMs: 0 }, { data: "é".repeat(8_191) }), // 16384 bytes as JSON
      command("schedule", tenant, {}, { serviceCallId: "spaces and ünïcödé ok \u00a0", dueAt: "2020-01-01T00:00:00+14:00" }),
    ];
    const nearHorizon = command("schedule", tenant, {}, { dueAt: fromNow(DAY_MS - 60_000) });
    const before = await settledMetrics(service, client);
    for (const c of [...accepted, nearHorizon]) await client.publishRaw(subjectOf("schedule", tenant), c.json);

    for (const c of accepted) {
      const event = await client.waitForDue(tenant, c.payload.serviceCallId as string);
      expect(event.body.correlationId).toBe(c.envelope.correlationId);
      expect(event.body.payload.data).toEqual(c.payload.data);
    }
    await barrier(client);
    expect(client.received("CommandRejected").filter((e) => e.body.payload?.subject === subjectOf("schedule", tenant))).toEqual([]);
    const after = await settledMetrics(service, client);
    expect(deltas(before, after, [commandsSeries("ScheduleTimer", "accepted"), "timer_schedules_pending"])).toEqual({
      [commandsSeries("ScheduleTimer", "accepted")]: accepted.length + 2, // + near-horizon timer + barrier
      timer_schedules_pending: 1, // the near-horizon timer
    });
    await client.cancel(tenant, nearHorizon.serviceCallId);
    await eventually(async () =>
      expect((await settledMetrics(service, client)).get("timer_schedules_pending")).toBe(before.get("timer_schedules_pending")),
    );
  });

  it("when all the malformed commands above have been handled, then the service is still ready and a normal timer fires", async () => {
    expect(allCases.length).toBeGreaterThan(50);
    const response = await fetch(`${service.baseUrl}/readyz`);
    expect(response.status).toBe(200);
    const event = await barrier(client, "still-alive");
    expect(event.body.type).toBe("DueTimeReached");
    expect(await (await fetch(`${service.baseUrl}/healthz`)).status).toBe(200);
  });

  it("when a command is rejected, then its CommandRejected is stored in TIMER_EVENTS", async () => {
    const subject = subjectOf("schedule", "stored-rejection");
    await client.publishRaw(subject, "{");
    const rejection = await client.waitForRejection(subject);
    const stored = await (
      await manager(client)
    ).streams.getMessage("TIMER_EVENTS", { last_by_subj: "timer.events.rejected.stored-rejection" });
    expect(stored?.json()).toEqual(rejection.body);
  });

  function failNoRejection(c: RejectionCase): never {
    const other = client.received("CommandRejected").map((e) => `${e.body.payload?.subject} ${e.body.payload?.code}`);
    throw new Error(`${c.name}: no CommandRejected for ${c.subject} within 5 s; rejections seen: ${other.slice(-10).join("; ")}`);
  }
});

function echo(c: ReturnType<typeof command>): Pick<RejectionCase, "commandId" | "serviceCallId" | "correlationId"> {
  return { commandId: c.commandId, serviceCallId: c.serviceCallId, correlationId: c.correlationId };
}

function expectEcho(label: string, member: string, actual: unknown, expected: string | null | undefined): void {
  if (expected === undefined) return;
  if (expected === null) expect(actual, `${label}: ${member} must be absent`).toBeUndefined();
  else expect(actual, `${label}: ${member}`).toBe(expected);
}
