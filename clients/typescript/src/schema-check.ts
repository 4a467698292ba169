/**
 * A small JSON Schema (2020-12) checker for the keywords the bundled schemas use, so that input is
 * checked by the service's own published schemas without a validation library at run time. A test
 * holds it to ajv on the same schemas and fails when a schema starts using another keyword.
 */

export type Schema = { readonly [keyword: string]: unknown };

export const SUPPORTED_KEYWORDS: ReadonlySet<string> = new Set([
  "$schema",
  "title",
  "description",
  "type",
  "const",
  "enum",
  "properties",
  "required",
  "additionalProperties",
  "dependentRequired",
  "items",
  "minLength",
  "maxLength",
  "pattern",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "anyOf",
  "oneOf",
  "not",
]);

const patterns = new Map<string, RegExp>();

function typeMatches(type: string, value: unknown): boolean {
  switch (type) {
    case "null":
      return value === null;
    case "boolean":
      return typeof value === "boolean";
    case "string":
      return typeof value === "string";
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "integer":
      return Number.isInteger(value);
    case "array":
      return Array.isArray(value);
    case "object":
      return typeof value === "object" && value !== null && !Array.isArray(value);
    default:
      return false;
  }
}

function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

function equal(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function describedFormat(description: string, value: string): string {
  const example = description.startsWith("ISO 8601") ? ', e.g. "2026-01-01T09:00:00Z" or "2026-01-01T10:00:00+01:00"' : "";
  return `must be ${description}${example}; got ${JSON.stringify(value)}`;
}

/** The first problem of `value` against `schema` (`/payload/dueAt: …`), or undefined when it matches. */
export function schemaProblem(schema: Schema, value: unknown, path = ""): string | undefined {
  const at = path === "" ? "/" : path;
  if (value === undefined) return `${at}: is required`;
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
    if (!types.some((t) => typeMatches(t, value))) return `${at}: must be ${types.join(" or ")}`;
  }
  if ("const" in schema && !equal(schema.const, value)) return `${at}: must be ${JSON.stringify(schema.const)}`;
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => equal(e, value))) return `${at}: must be one of ${schema.enum.join(", ")}`;
  if (typeof value === "string") {
    const length = schema.minLength !== undefined || schema.maxLength !== undefined ? codePoints(value) : 0;
    if (typeof schema.minLength === "number" && length < schema.minLength)
      return `${at}: must have at least ${schema.minLength} characters`;
    if (typeof schema.maxLength === "number" && length > schema.maxLength) return `${at}: must have at most ${schema.maxLength} characters`;
    if (typeof schema.pattern === "string") {
      let regex = patterns.get(schema.pattern);
      if (regex === undefined) patterns.set(schema.pattern, (regex = new RegExp(schema.pattern, "u")));
      // A described pattern names what a valid value looks like; the regex itself helps nobody.
      if (!regex.test(value))
        return typeof schema.description === "string"
          ? `${at}: ${describedFormat(schema.description, value)}`
          : `${at}: must match ${schema.pattern}`;
    }
  }
  if (typeof value === "number") {
    if (typeof schema.minimum === "number" && value < schema.minimum) return `${at}: must be at least ${schema.minimum}`;
    if (typeof schema.maximum === "number" && value > schema.maximum) return `${at}: must be at most ${schema.maximum}`;
    if (typeof schema.exclusiveMinimum === "number" && value <= schema.exclusiveMinimum)
      return `${at}: must be over ${schema.exclusiveMinimum}`;
    if (typeof schema.exclusiveMaximum === "number" && value >= schema.exclusiveMaximum)
      return `${at}: must be under ${schema.exclusiveMaximum}`;
  }
  if (Array.isArray(value) && schema.items !== undefined) {
    for (let i = 0; i < value.length; i++) {
      const problem = schemaProblem(schema.items as Schema, value[i], `${path}/${i}`);
      if (problem !== undefined) return problem;
    }
  }
  if (typeMatches("object", value)) {
    const object = value as Record<string, unknown>;
    for (const key of (schema.required as string[] | undefined) ?? []) {
      if (!Object.hasOwn(object, key)) return `${path}/${key}: is required`;
    }
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    for (const [key, member] of Object.entries(object)) {
      const memberSchema = Object.hasOwn(properties, key) ? properties[key] : undefined;
      if (memberSchema !== undefined) {
        const problem = schemaProblem(memberSchema, member, `${path}/${key}`);
        if (problem !== undefined) return problem;
      } else if (schema.additionalProperties === false) {
        return `${path}/${key}: is not allowed`;
      } else if (typeof schema.additionalProperties === "object" && schema.additionalProperties !== null) {
        const problem = schemaProblem(schema.additionalProperties as Schema, member, `${path}/${key}`);
        if (problem !== undefined) return problem;
      }
    }
    for (const [key, needed] of Object.entries((schema.dependentRequired ?? {}) as Record<string, string[]>)) {
      if (Object.hasOwn(object, key)) {
        const missing = needed.find((n) => !Object.hasOwn(object, n));
        if (missing !== undefined) return `${path}/${missing}: is required with ${key}`;
      }
    }
  }
  if (Array.isArray(schema.anyOf)) {
    const problems = (schema.anyOf as Schema[]).map((s) => schemaProblem(s, value, path));
    if (!problems.includes(undefined)) return problems.find((p) => !p!.endsWith("must be null")) ?? problems[0];
  }
  if (Array.isArray(schema.oneOf)) {
    const matches = (schema.oneOf as Schema[]).filter((s) => schemaProblem(s, value, path) === undefined).length;
    if (matches !== 1) return `${at}: must match exactly one of ${schema.oneOf.length} alternatives (matches ${matches})`;
  }
  if (schema.not !== undefined && schemaProblem(schema.not as Schema, value, path) === undefined) {
    return `${at}: must not match ${JSON.stringify(schema.not)}`;
  }
  return undefined;
}
