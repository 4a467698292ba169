import { readFile } from "node:fs/promises";
import type { ServerResponse } from "node:http";

/**
 * The published contract, open like /metrics (CONTRACT §15): `GET /asyncapi.yaml` and the JSON
 * Schemas it refers to (`./schemas/{Name}.json`), read from the repository root (next to dist/ and
 * src/ alike) once and kept.
 */

const ROOT = new URL("../../../", import.meta.url);
const SCHEMA_PATH = /^\/schemas\/[A-Za-z]{1,64}\.json$/;

const cache = new Map<string, Promise<string | undefined>>();

export function isContractDocumentPath(path: string | undefined): path is string {
  return path === "/asyncapi.yaml" || (path !== undefined && SCHEMA_PATH.test(path));
}

export function serveContractDocument(path: string, response: ServerResponse): void {
  let text = cache.get(path);
  if (text === undefined) {
    text = readFile(new URL(`.${path}`, ROOT), "utf8").catch(() => undefined);
    cache.set(path, text);
  }
  void text.then((body) => {
    if (body === undefined) {
      response.writeHead(404, { "Content-Type": "application/json" });
      response.end(JSON.stringify({ error: "not found" }));
      return;
    }
    response.writeHead(200, { "Content-Type": path.endsWith(".yaml") ? "application/yaml; charset=utf-8" : "application/schema+json" });
    response.end(body);
  });
}
