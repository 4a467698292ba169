import { connect } from "@nats-io/transport-node";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";

/** CONTRACT §15 on the running service: the AsyncAPI document over HTTP, the schemas in the micro service's info. */
describe("published contract on the running service", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url, { TIMER_ADMIN_TOKEN: "contract-documents-token" });
  });

  afterAll(async () => {
    await service?.dispose();
    await nats?.dispose();
  });

  it("when GET /asyncapi.yaml is asked without a token (the admin API needs one), then it answers the committed document", async () => {
    const response = await fetch(`${service.baseUrl}/asyncapi.yaml`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe(readFileSync(resolve(import.meta.dirname, "../../asyncapi.yaml"), "utf8"));
    const schema = await fetch(`${service.baseUrl}/schemas/DueTimeReached.json`);
    expect(((await schema.json()) as { title: string }).title).toBe("DueTimeReached");
  });

  it("when the micro service is asked for its info, then each query endpoint carries its request and response schemas", async () => {
    const nc = await connect({ servers: nats.url });
    try {
      const info = (await nc.request("$SRV.INFO.timer-service", "", { timeout: 5000 })).json<{
        endpoints: { name: string; metadata: Record<string, string> }[];
      }>();
      const titles = Object.fromEntries(
        info.endpoints.map((e) => [
          e.name,
          [JSON.parse(e.metadata.request_schema!).title as string, JSON.parse(e.metadata.response_schema!).title as string],
        ]),
      );
      expect(titles).toEqual({
        get: ["GetTimerRequest", "GetTimerReply"],
        list: ["ListTimersRequest", "ListTimersReply"],
        stats: ["TimerStatsRequest", "TimerStatsReply"],
      });
    } finally {
      await nc.close();
    }
  });
});
