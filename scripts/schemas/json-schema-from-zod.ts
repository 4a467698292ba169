import { z } from "zod";
import { isTenantId, TENANT_ID, UNKNOWN_TENANT } from "../../src/app/commands/command-text.js";

/**
 * zod → JSON Schema (draft 2020-12) with the service's refinements spelled out. zod's own output
 * leaves a `.refine(fn)` out; here each refinement on a string becomes keywords: the tenant rule by
 * identity, every other one by probing it (a code-point length range, and whether it refuses
 * control characters). A refinement that fits neither makes the generator fail, so that it is
 * described rather than silently dropped.
 */

export type JsonSchema = { [key: string]: unknown };

const NO_CONTROL_CHARACTERS = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$";
const PROBE_LIMIT = 5000;

interface CustomCheck {
  readonly fn: (value: unknown) => unknown;
}

function customChecks(schema: z.core.$ZodType): CustomCheck[] {
  const checks = (schema._zod.def as { checks?: { _zod: { def: { check?: string; fn?: unknown } } }[] }).checks ?? [];
  return checks
    .filter((c) => c._zod.def.check === "custom" && typeof c._zod.def.fn === "function")
    .map((c) => ({ fn: c._zod.def.fn as CustomCheck["fn"] }));
}

function describeRefinement(fn: CustomCheck["fn"], path: readonly (string | number)[]): JsonSchema {
  if (fn === isTenantId) return { pattern: TENANT_ID.source, not: { const: UNKNOWN_TENANT } };
  const accepts = (n: number, unit = "a") => fn(unit.repeat(n)) === true;
  let min = -1;
  for (let n = 0; n <= 8 && min < 0; n++) if (accepts(n)) min = n;
  let max = -1;
  for (let n = PROBE_LIMIT; n >= Math.max(min, 0) && max < 0; n--) if (accepts(n)) max = n;
  if (min < 0 || max < 0 || max === PROBE_LIMIT || !accepts(max, "😀") || accepts(max + 1, "😀") || (min > 0 && accepts(min - 1, "😀"))) {
    throw new Error(
      `cannot describe the refinement at ${path.join(".") || "(root)"} in JSON Schema: add a rule to json-schema-from-zod.ts`,
    );
  }
  for (let n = min; n <= max; n += Math.max(1, Math.floor((max - min) / 16))) {
    if (!accepts(n)) throw new Error(`the refinement at ${path.join(".")} accepts a length range with holes`);
  }
  const shortest = Math.max(min, 1);
  const refusesControl = shortest <= max && fn("a".repeat(shortest - 1) + "\u0001") !== true;
  return { minLength: min, maxLength: max, ...(refusesControl ? { pattern: NO_CONTROL_CHARACTERS } : {}) };
}

/** The JSON Schema of what `schema` accepts as input. */
export function jsonSchemaFromZod(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, {
    io: "input",
    target: "draft-2020-12",
    reused: "inline",
    override: (ctx) => {
      for (const check of customChecks(ctx.zodSchema)) {
        if (ctx.jsonSchema.type !== "string") throw new Error(`a refinement on a ${String(ctx.jsonSchema.type)} at ${ctx.path.join(".")}`);
        Object.assign(ctx.jsonSchema, describeRefinement(check.fn, ctx.path));
      }
    },
  }) as JsonSchema;
}

/** The member at a JSON pointer (`/properties/payload`), or a thrown error naming the pointer. */
export function at(schema: JsonSchema, pointer: string): JsonSchema {
  let node: unknown = schema;
  for (const token of pointer.split("/").slice(1)) {
    node = typeof node === "object" && node !== null ? (node as Record<string, unknown>)[token] : undefined;
    if (node === undefined) throw new Error(`no ${pointer} in the generated schema: the zod schema changed, update the rule`);
  }
  return node as JsonSchema;
}
