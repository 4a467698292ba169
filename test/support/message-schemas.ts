import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { parse } from "yaml";

/**
 * The published JSON Schemas (schemas/*.json) compiled with ajv, for tests that hold messages to
 * them: every event a test reads can go through `expectSchemaValid`, and its headers through
 * `eventHeaderProblems` (the EventHeaders schema of asyncapi.yaml).
 */

const SCHEMAS_DIR = resolve(import.meta.dirname, "../../schemas");
const ASYNCAPI = resolve(import.meta.dirname, "../../asyncapi.yaml");

let validators: Map<string, ValidateFunction> | undefined;

export function schemaValidators(): Map<string, ValidateFunction> {
  if (validators === undefined) {
    const ajv = new Ajv2020({ allErrors: true, strict: false });
    validators = new Map();
    for (const file of readdirSync(SCHEMAS_DIR).filter((f) => f.endsWith(".json"))) {
      const schema = JSON.parse(readFileSync(resolve(SCHEMAS_DIR, file), "utf8")) as { title: string };
      validators.set(schema.title, ajv.compile(schema));
    }
  }
  return validators;
}

/** The problems of `message` against the schema named `name` (default: its `type`), none when valid. */
export function schemaProblems(message: unknown, name?: string): string[] {
  const title = name ?? (message as { type?: unknown } | null)?.type;
  const validate = typeof title === "string" ? schemaValidators().get(title) : undefined;
  if (validate === undefined) return [`no schema named ${String(title)}`];
  if (validate(message)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? e.keyword}`);
}

/** Throws with the schema's complaints when `message` does not validate. */
export function expectSchemaValid(message: unknown, name?: string): void {
  const problems = schemaProblems(message, name);
  if (problems.length > 0) {
    throw new Error(
      `message does not match schema ${name ?? String((message as { type?: unknown }).type)}: ${problems.join("; ")}\n${JSON.stringify(message)}`,
    );
  }
}

let eventHeaders: ValidateFunction | undefined;

/** The problems of an event's NATS headers (name → value, absent ones left out) against asyncapi.yaml, none when valid. */
export function eventHeaderProblems(headers: Readonly<Record<string, string>>): string[] {
  if (eventHeaders === undefined) {
    const document = parse(readFileSync(ASYNCAPI, "utf8")) as { components: { schemas: { EventHeaders: object } } };
    eventHeaders = new Ajv2020({ allErrors: true, strict: false }).compile(document.components.schemas.EventHeaders);
  }
  if (eventHeaders(headers)) return [];
  return (eventHeaders.errors ?? []).map((e) => `headers${e.instancePath} ${e.message ?? e.keyword}`);
}
