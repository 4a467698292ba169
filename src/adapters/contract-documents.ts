import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";

/**
 * The published contract files (CONTRACT §15: asyncapi.yaml, schemas/*.json) at the repository
 * root, next to dist/ and src/ alike (the image copies them there too).
 */

const ROOT = new URL("../../", import.meta.url);
const cache = new Map<string, Promise<string | undefined>>();

/** The text of a contract file by its path from the root (`asyncapi.yaml`), read once; undefined when missing. */
export function readContractDocument(path: string): Promise<string | undefined> {
  let text = cache.get(path);
  if (text === undefined) {
    text = readFile(new URL(path, ROOT), "utf8").catch(() => undefined);
    cache.set(path, text);
  }
  return text;
}

/** A published schema as compact JSON text, or undefined when it is not there. */
export function schemaJsonText(name: string): string | undefined {
  try {
    return JSON.stringify(JSON.parse(readFileSync(new URL(`schemas/${name}.json`, ROOT), "utf8")));
  } catch {
    return undefined;
  }
}
