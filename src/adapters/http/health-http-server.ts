import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import { applyHttpLimits, HTTP_SERVER_OPTIONS } from "./http-server-limits.js";
import { isContractDocumentPath, serveContractDocument } from "./contract-documents.js";

/** One named condition of readiness; `ok` is read at each request. */
export interface ReadinessCheck {
  readonly name: string;
  ok(): boolean;
}

/**
 * GET /metrics (Prometheus text), /healthz (200 while the process runs), /readyz (200 when every
 * readiness check passes, else 503, with the checks as JSON) and the contract documents
 * (/asyncapi.yaml and its schemas, contract-documents.ts). Anything else: 404, or 405 for a
 * method other than GET/HEAD. Time-outs and a connection cap keep it answering under many idle or
 * slow sockets (http-server-limits.ts).
 */
export class HealthHttpServer {
  private readonly server: Server;
  /** Routes added with `use` (the query API and admin page); asked before the 404. */
  private extraRoutes: ((request: IncomingMessage, response: ServerResponse) => boolean) | undefined;

  constructor(
    private readonly registry: Registry,
    private readonly checks: readonly ReadinessCheck[],
  ) {
    this.server = createServer(HTTP_SERVER_OPTIONS, (request, response) => {
      const path = (request.url ?? "/").split("?")[0];
      const known = path === "/metrics" || path === "/healthz" || path === "/readyz" || isContractDocumentPath(path);
      if (!known && this.extraRoutes?.(request, response) === true) return;
      if (!known) return reply(response, 404, { error: "not found" });
      if (request.method !== "GET" && request.method !== "HEAD") {
        response.setHeader("Allow", "GET, HEAD");
        return reply(response, 405, { error: "method not allowed" });
      }
      if (path === "/healthz") return reply(response, 200, { status: "ok" });
      if (isContractDocumentPath(path)) return serveContractDocument(path, response);
      if (path === "/readyz") {
        const results = Object.fromEntries(this.checks.map((check) => [check.name, check.ok()]));
        const ready = Object.values(results).every(Boolean);
        return reply(response, ready ? 200 : 503, { status: ready ? "ready" : "not ready", checks: results });
      }
      this.registry.metrics().then(
        (text) => {
          response.writeHead(200, { "Content-Type": this.registry.contentType });
          response.end(text);
        },
        (error: unknown) => reply(response, 500, { error: String(error) }),
      );
    });
    applyHttpLimits(this.server);
  }

  /** Adds routes answered before the 404: they return true for a request they answered. */
  use(routes: (request: IncomingMessage, response: ServerResponse) => boolean): void {
    this.extraRoutes = routes;
  }

  /** Listens and returns the bound address (port 0 picks a free port). */
  async listen(port: number, host: string): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => {
        this.server.off("error", reject);
        resolve();
      });
    });
    return this.server.address() as AddressInfo;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function reply(response: ServerResponse, status: number, body: object): void {
  response.writeHead(status, { "Content-Type": "application/json" });
  response.end(JSON.stringify(body));
}
