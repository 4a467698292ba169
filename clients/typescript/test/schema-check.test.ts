/**
 * The client's bundled checker against ajv on the same schemas: it must decide like a full JSON
 * Schema validator on every bundled schema, and know every keyword they use.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { schemaProblems } from "../../../test/support/message-schemas.js";
import { propertySeed } from "../../../test/support/property-seed.js";
import { MESSAGE_SCHEMAS } from "../src/message-schemas.js";
import { schemaProblem, SUPPORTED_KEYWORDS, type Schema } from "../src/schema-check.js";

const seed = propertySeed();

function keywords(node: unknown, found: Set<string>, parentIsMap = false): Set<string> {
  if (Array.isArray(node)) node.forEach((n) => keywords(n, found));
  else if (typeof node === "object" && node !== null) {
    for (const [key, value] of Object.entries(node)) {
      if (!parentIsMap) found.add(key);
      const isMap = !parentIsMap && (key === "properties" || key === "dependentRequired");
      if (key !== "const" && key !== "enum") keywords(value, found, isMap);
    }
  }
  return found;
}

const SAMPLES: Record<string, Record<string, unknown>> = {
  ScheduleTimer: {
    id: "c",
    type: "ScheduleTimer",
    tenantId: "acme",
    timestampMs: 1,
    payload: { tenantId: "acme", serviceCallId: "s", dueAt: "2026-01-01T00:00:00Z", repeat: { everyMs: 1000 } },
  },
  CancelTimer: { id: "c", type: "CancelTimer", tenantId: "acme", timestampMs: 1, payload: { tenantId: "acme", serviceCallId: "s" } },
  TimerFailed: {
    id: "c",
    type: "TimerFailed",
    tenantId: "acme",
    timestampMs: 1,
    payload: { tenantId: "acme", serviceCallId: "s", reason: "r" },
  },
  ListTimersRequest: { state: "Failed", limit: 5, dueAfter: "2026-01-01T00:00+01:00" },
  GetTimerRequest: { serviceCallId: "s" },
};

const leafArb = fc.oneof(
  fc.constantFrom(
    null,
    "",
    "x",
    "acme",
    "_unknown",
    "😀".repeat(129),
    "a\u0001",
    "2026-01-01T00:00:00Z",
    "2026-01-01T00:00:00",
    0,
    -1,
    1.5,
    100,
    101,
    1000,
    true,
    [],
    {},
  ),
  fc.string({ maxLength: 6 }),
  fc.integer(),
  fc.jsonValue({ maxDepth: 2 }),
);

function setAt(target: Record<string, unknown>, path: string[], value: unknown, remove: boolean): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    if (typeof node[key] !== "object" || node[key] === null || Array.isArray(node[key])) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  if (remove) delete node[path.at(-1)!];
  else node[path.at(-1)!] = value;
}

describe(`bundled schema checker (seed ${seed})`, () => {
  it("when the bundled schemas are read, then every keyword they use is one the checker knows", () => {
    const used = keywords(Object.values(MESSAGE_SCHEMAS), new Set());
    expect([...used].filter((k) => !SUPPORTED_KEYWORDS.has(k))).toEqual([]);
    expect(Object.keys(MESSAGE_SCHEMAS).sort()).toEqual(
      [
        "CancelTimer",
        "CancelTimersByPrefix",
        "GetTimerRequest",
        "ListTimersRequest",
        "RetryTimer",
        "ScheduleTimer",
        "TimerCompleted",
        "TimerFailed",
        "TimerStatsRequest",
      ].sort(),
    );
  });

  it("when messages are mutated, then the checker and ajv decide alike", () => {
    const paths = [
      ["id"],
      ["tenantId"],
      ["timestampMs"],
      ["correlationId"],
      ["payload", "tenantId"],
      ["payload", "serviceCallId"],
      ["payload", "dueAt"],
      ["payload", "reason"],
      ["payload", "repeat"],
      ["payload", "repeat", "everyMs"],
      ["payload", "repeat", "cron"],
      ["payload", "repeat", "timezone"],
      ["payload", "delivery"],
      ["payload", "delivery", "maxRetries"],
      ["state"],
      ["limit"],
      ["cursor"],
      ["serviceCallId"],
      ["other"],
    ];
    let valid = 0;
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.keys(SAMPLES)),
        fc.array(fc.record({ path: fc.constantFrom(...paths), value: leafArb, remove: fc.boolean() }), { maxLength: 3 }),
        (name, mutations) => {
          const message = structuredClone(SAMPLES[name]!);
          for (const m of mutations) setAt(message, m.path, m.value, m.remove);
          const ours = schemaProblem(MESSAGE_SCHEMAS[name] as Schema, message);
          const ajv = schemaProblems(message, name);
          if (ours === undefined) valid++;
          expect(ours === undefined, `checker: ${ours ?? "valid"}; ajv: ${ajv.join("; ") || "valid"}; ${JSON.stringify(message)}`).toBe(
            ajv.length === 0,
          );
        },
      ),
      { seed, numRuns: 5000 },
    );
    expect(valid).toBeGreaterThan(200);
  });
});
