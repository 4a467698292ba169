import type { ServerResponse } from "node:http";
import { readContractDocument } from "../contract-documents.js";

/** `GET /asyncapi.yaml` and the JSON Schemas it refers to (`./schemas/{Name}.json`), open like /metrics (CONTRACT §15). */

const SCHEMA_PATH = /^\/schemas\/[A-Za-z]{1,64}\.json$/;

export function isContractDocumentPath(path: string | undefined): path is string {
  return path === "/asyncapi.yaml" || (path !== undefined && SCHEMA_PATH.test(path));
}

export function serveContractDocument(path: string, response: ServerResponse): void {
  void readContractDocument(path.slice(1)).then((body) => {
    if (body === undefined) {
      response.writeHead(404, { "Content-Type": "application/json" });
      response.end(JSON.stringify({ error: "not found" }));
      return;
    }
    response.writeHead(200, { "Content-Type": path.endsWith(".yaml") ? "application/yaml; charset=utf-8" : "application/schema+json" });
    response.end(body);
  });
}
