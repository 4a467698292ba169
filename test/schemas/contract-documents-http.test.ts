import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HealthHttpServer } from "../../src/adapters/http/health-http-server.js";

const ROOT = resolve(import.meta.dirname, "../..");

describe("GET /asyncapi.yaml", () => {
  const server = new HealthHttpServer(new Registry(), [{ name: "storage", ok: () => false }]);
  let baseUrl = "";
  beforeAll(async () => {
    const address = await server.listen(0, "127.0.0.1");
    baseUrl = `http://127.0.0.1:${address.port}`;
    // the admin routes answer 401 without a token; the contract documents are asked before them
    server.use((_request, response) => {
      response.writeHead(401).end();
      return true;
    });
  });
  afterAll(() => server.close());

  it("when asked without a token, then it answers the committed document as YAML", async () => {
    const response = await fetch(`${baseUrl}/asyncapi.yaml`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/yaml/);
    expect(await response.text()).toBe(readFileSync(resolve(ROOT, "asyncapi.yaml"), "utf8"));
  });

  it("when a schema it refers to is asked for, then it answers the schema; an unknown one is 404, a POST 405", async () => {
    const schema = await fetch(`${baseUrl}/schemas/ScheduleTimer.json`);
    expect(schema.status).toBe(200);
    expect(((await schema.json()) as { title: string }).title).toBe("ScheduleTimer");
    expect((await fetch(`${baseUrl}/schemas/NoSuchMessage.json`)).status).toBe(404);
    expect((await fetch(`${baseUrl}/schemas/..%2Fpackage.json`)).status).toBe(401);
    expect((await fetch(`${baseUrl}/asyncapi.yaml`, { method: "POST" })).status).toBe(405);
  });
});
