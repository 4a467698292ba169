/**
 * The published schemas against the service's own decoder, on a corpus of valid commands and
 * random mutations of them: what the decoder accepts, the schema accepts; what the decoder rejects
 * as malformed, the schema rejects, except where the schema is documented to be looser
 * (`LOOSER_WHERE` below and docs/design/message-schemas.md): rules across members or against the
 * clock (TENANT_MISMATCH, DUE_TOO_FAR), byte sizes (TOO_LARGE), calendar validity of dates, cron
 * rules and time zones, and unpaired surrogates.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CronerCalendar } from "../../src/adapters/cron/croner-calendar.js";
import { CommandDecoder, type DecodedCommand } from "../../src/app/commands/command-decoder.js";
import { commandEnvelopeSchema } from "../../src/app/commands/command-envelope.schema.js";
import { retryTimerPayloadSchema } from "../../src/app/commands/retry-timer.schema.js";
import { getRequestSchema, listRequestSchema, statsRequestSchema } from "../../src/app/queries/query-requests.js";
import { ISO_DATE_TIME } from "../../src/domain/due-time.js";
import { FakeClock, T0 } from "../support/fakes/fake-clock.js";
import { schemaProblems } from "../support/message-schemas.js";
import { propertySeed } from "../support/property-seed.js";

const seed = propertySeed();
// A variable, not a literal: a decoder with a clock-skew limit reads maxClockSkewMs, an older one ignores it.
const decoderOptions = {
  subjectPrefix: "timer",
  maxHorizonDays: 3650,
  maxClockSkewMs: 300_000,
  clock: new FakeClock(T0),
  calendar: new CronerCalendar(),
};
const decoder = new CommandDecoder(decoderOptions);
const encoder = new TextEncoder();
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const TOKENS: Record<string, string> = {
  ScheduleTimer: "schedule",
  CancelTimer: "cancel",
  CancelTimersByPrefix: "cancelprefix",
  TimerCompleted: "complete",
  TimerFailed: "fail",
  RetryTimer: "retry",
};

const iso = (offsetMs: number) => new Date(T0 + offsetMs).toISOString();

const VALID: Record<string, unknown>[] = [
  { type: "ScheduleTimer", payload: { serviceCallId: "order-1", dueAt: iso(2000) } },
  {
    type: "ScheduleTimer",
    correlationId: "req-1",
    payload: { serviceCallId: "😀".repeat(256), dueAt: "2026-01-01T01:00:00.123456+01:00", data: { a: [1, null] } },
  },
  {
    type: "ScheduleTimer",
    payload: { serviceCallId: "r", dueAt: iso(0), repeat: { everyMs: 60000, maxOccurrences: 3 }, maxLatenessMs: 0 },
  },
  {
    type: "ScheduleTimer",
    payload: {
      serviceCallId: "c",
      dueAt: iso(0),
      repeat: { cron: "0 9 * * MON-FRI", timezone: "Europe/Berlin", until: iso(86400000 * 30) },
    },
  },
  {
    type: "ScheduleTimer",
    payload: {
      serviceCallId: "d",
      dueAt: iso(0),
      delivery: { maxRetries: 3, backoffMs: 100 },
      createdBy: "billing",
      createdVia: "api",
      repeat: null,
    },
  },
  { type: "CancelTimer", payload: { serviceCallId: "order-1" } },
  { type: "CancelTimersByPrefix", payload: { serviceCallIdPrefix: "order-" } },
  { type: "TimerCompleted", payload: { serviceCallId: "order-1", result: "" } },
  { type: "TimerCompleted", payload: { serviceCallId: "order-1" } },
  { type: "TimerFailed", payload: { serviceCallId: "order-1", reason: "x".repeat(1024) } },
  { type: "RetryTimer", payload: { serviceCallId: "order-1" } },
];

function envelope(partial: Record<string, unknown>): Record<string, unknown> {
  return {
    id: "cmd-1",
    tenantId: "acme",
    timestampMs: T0,
    ...partial,
    payload: { tenantId: "acme", ...(partial.payload as object) },
  };
}

/** Values that sit on or just past the rules of some member. */
const valueArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    null,
    "",
    "a",
    "_unknown",
    "acme",
    "other",
    "x".repeat(64),
    "x".repeat(65),
    "😀".repeat(128),
    "😀".repeat(129),
    "😀".repeat(256),
    "😀".repeat(257),
    "x".repeat(1025),
    "a\u0000",
    "a\u0085",
    "\uD800",
    "2026-01-01T00:00:00Z",
    "2026-01-01T00:00:00",
    "2026-02-30T00:00:00Z",
    "2026-01-01 00:00Z",
    "2026-01-01T00:00+0100",
    "9999-12-31T23:59:59Z",
    "* * * * *",
    "61 * * * *",
    "Mars/Olympus",
    "Europe/Berlin",
    "ScheduleTimer",
    "CancelTimer",
    -1,
    0,
    1.5,
    99,
    100,
    101,
    999,
    1000,
    T0,
    Number.MAX_SAFE_INTEGER,
    Number.MAX_SAFE_INTEGER + 2,
    true,
    [],
    {},
    { everyMs: 1000 },
    { cron: "0 9 * * *" },
    { everyMs: 1000, cron: "0 9 * * *" },
    { everyMs: 1000, timezone: "UTC" },
    { maxRetries: 0 },
    { maxRetries: 101 },
  ),
  fc.string({ maxLength: 8 }),
  fc.integer(),
  fc.jsonValue({ maxDepth: 2 }),
);

const PATHS = [
  ["id"],
  ["type"],
  ["tenantId"],
  ["timestampMs"],
  ["correlationId"],
  ["payload"],
  ["payload", "tenantId"],
  ["payload", "serviceCallId"],
  ["payload", "serviceCallIdPrefix"],
  ["payload", "dueAt"],
  ["payload", "data"],
  ["payload", "result"],
  ["payload", "reason"],
  ["payload", "repeat"],
  ["payload", "repeat", "everyMs"],
  ["payload", "repeat", "cron"],
  ["payload", "repeat", "timezone"],
  ["payload", "repeat", "until"],
  ["payload", "repeat", "maxOccurrences"],
  ["payload", "maxLatenessMs"],
  ["payload", "delivery"],
  ["payload", "delivery", "maxRetries"],
  ["payload", "delivery", "backoffMs"],
  ["payload", "delivery", "completionTimeoutMs"],
  ["payload", "createdBy"],
  ["payload", "createdVia"],
];

type Mutation = { path: string[]; value: unknown; remove: boolean };

function mutate(base: Record<string, unknown>, mutations: Mutation[]): Record<string, unknown> {
  const copy = structuredClone(base);
  for (const { path, value, remove } of mutations) {
    let node: unknown = copy;
    for (const key of path.slice(0, -1)) {
      const next = (node as Record<string, unknown>)[key];
      if (typeof next !== "object" || next === null || Array.isArray(next)) {
        (node as Record<string, unknown>)[key] = {};
      }
      node = (node as Record<string, unknown>)[key];
    }
    const last = path.at(-1)!;
    if (remove) delete (node as Record<string, unknown>)[last];
    else (node as Record<string, unknown>)[last] = value;
  }
  return copy;
}

/** What the service decides; RetryTimer by its zod schemas while the decoder does not take it yet. */
function decide(type: string, message: Record<string, unknown>): DecodedCommand | { ok: boolean; zodOnly: true } {
  const subject = `timer.commands.${TOKENS[type]}.acme`;
  const decoded = decoder.decode({ subject, body: encoder.encode(JSON.stringify(message)), brokerTimestampMs: T0, sourceId: "S:1" });
  if (decoded.type !== "unknown") return decoded;
  const envelopeOk = commandEnvelopeSchema.safeParse(message);
  const ok = envelopeOk.success && message.type === type && retryTimerPayloadSchema.safeParse(message.payload).success;
  return { ok, zodOnly: true };
}

function hasLoneSurrogate(value: unknown): boolean {
  return (
    JSON.stringify(value).match(/\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f])|(?<!\\ud[89ab][0-9a-f]{2})\\ud[c-f][0-9a-f]{2}/i) !== null ||
    LONE_SURROGATE.test(JSON.stringify(value))
  );
}

/** The decoder's rejections the schema need not repeat (documented in docs/design/message-schemas.md). */
function looserWhere(decoded: DecodedCommand, message: Record<string, unknown>): boolean {
  if (decoded.ok) return false;
  const { code, reason } = decoded.rejection;
  if (["TENANT_MISMATCH", "DUE_TOO_FAR", "TOO_LARGE", "QUOTA_EXCEEDED"].includes(code)) return true;
  if (hasLoneSurrogate(message)) return true;
  if (code === "INVALID_ENVELOPE" && /ahead of the service's clock/.test(reason)) return true;
  if (code !== "INVALID_FIELD") return false;
  if (/payload\.repeat\.(cron|timezone)|before the first occurrence|no occurrence at or after|nested deeper/.test(reason)) return true;
  // a date-time of the right form but an impossible calendar date or time (February 30, 24:00, +24:00)
  const dueAt = (message.payload as Record<string, unknown>).dueAt;
  const until = ((message.payload as Record<string, unknown>).repeat as Record<string, unknown> | undefined)?.until;
  return /payload\.(dueAt|repeat\.until)/.test(reason) && [dueAt, until].some((t) => typeof t === "string" && ISO_DATE_TIME.test(t));
}

const LOOSER_WHERE = "see looserWhere";

describe(`schemas agree with the command decoder (seed ${seed})`, () => {
  it("when a valid command of each type is checked, then the decoder and its schema accept it", () => {
    for (const partial of VALID) {
      const message = envelope(partial);
      const type = message.type as string;
      expect(decide(type, message).ok, JSON.stringify(message)).toBe(true);
      expect(schemaProblems(message, type)).toEqual([]);
    }
  });

  it(`when commands are mutated, then the schema accepts all the decoder accepts and rejects all it rejects (${LOOSER_WHERE})`, () => {
    const counts = { accepted: 0, rejected: 0, looser: 0 };
    const mutationArb = fc.record({ path: fc.constantFrom(...PATHS), value: valueArb, remove: fc.boolean() });
    fc.assert(
      fc.property(fc.constantFrom(...VALID), fc.array(mutationArb, { minLength: 1, maxLength: 3 }), (partial, mutations) => {
        const message = mutate(envelope(partial), mutations);
        const type = partial.type as string;
        const decided = decide(type, message);
        const problems = schemaProblems(message, type);
        if (decided.ok) {
          counts.accepted++;
          expect(problems, `the schema refuses what the service accepts: ${JSON.stringify(message)}`).toEqual([]);
        } else if (problems.length > 0) {
          counts.rejected++;
        } else {
          counts.looser++;
          const allowed = "zodOnly" in decided ? hasLoneSurrogate(message) : looserWhere(decided, message);
          expect(allowed, `the schema accepts what the service rejects (${JSON.stringify(decided)}): ${JSON.stringify(message)}`).toBe(
            true,
          );
        }
      }),
      { seed, numRuns: 6000 },
    );
    expect(counts.accepted).toBeGreaterThan(300);
    expect(counts.rejected).toBeGreaterThan(1000);
  });

  it("when query requests are mutated, then the schema and the query request parser agree", () => {
    const requests: [string, Record<string, unknown>, { safeParse(v: unknown): { success: boolean } }][] = [
      ["GetTimerRequest", { serviceCallId: "order-1" }, getRequestSchema],
      [
        "ListTimersRequest",
        { state: "Scheduled", serviceCallIdPrefix: "o", dueAfter: iso(0), dueBefore: iso(1), limit: 10 },
        listRequestSchema,
      ],
      ["TimerStatsRequest", {}, statsRequestSchema],
    ];
    const keys = ["serviceCallId", "state", "serviceCallIdPrefix", "dueAfter", "dueBefore", "limit", "cursor", "other"];
    const queryValueArb = fc.oneof(valueArb, fc.constantFrom("Fired", "TimedOut", "scheduled", "WzEsMSwxLCJhIl0", "!!", 0, 1000, 1001));
    fc.assert(
      fc.property(
        fc.constantFrom(...requests),
        fc.array(fc.record({ key: fc.constantFrom(...keys), value: queryValueArb, remove: fc.boolean() }), { maxLength: 3 }),
        ([name, base, zodSchema], mutations) => {
          const request = mutate(
            base,
            mutations.map((m) => ({ path: [m.key], value: m.value, remove: m.remove })),
          );
          const zodOk = zodSchema.safeParse(request).success;
          const problems = schemaProblems(request, name);
          if (zodOk) expect(problems, JSON.stringify(request)).toEqual([]);
          // Looser: the calendar validity of dueAfter/dueBefore, a cursor's content, unpaired surrogates.
          else if (problems.length === 0) {
            const text = JSON.stringify(request);
            const explained =
              hasLoneSurrogate(request) ||
              typeof request.cursor === "string" ||
              [request.dueAfter, request.dueBefore].some((t) => typeof t === "string" && ISO_DATE_TIME.test(t));
            expect(explained, `the schema accepts what the service refuses: ${text}`).toBe(true);
          }
        },
      ),
      { seed, numRuns: 3000 },
    );
  });
});
