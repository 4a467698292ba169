import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient } from "../support/timer-client.js";
import { eventually, uniqueId } from "./integration-support.js";

/**
 * Span export over OTLP/HTTP (CONTRACT §13) from the built service to a receiver in the test, in
 * both protocols; and with the collector unreachable the service fires as before. Runs on SQLite,
 * and on Postgres with TEST_TIMER_STORE=postgres.
 */
const TENANT = "otlp";
const TRACE_ID = "5bf92f3577b34da6a3ce929d0e0e4736";

interface Received {
  readonly contentType: string;
  readonly body: Buffer;
}

/** A minimal OTLP/HTTP traces endpoint: keeps every request and answers 200. */
async function otlpReceiver(): Promise<{ server: Server; url: string; requests: Received[] }> {
  const requests: Received[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      if (request.url === "/v1/traces")
        requests.push({ contentType: String(request.headers["content-type"]), body: Buffer.concat(chunks) });
      response.writeHead(200, { "content-type": String(request.headers["content-type"]) });
      response.end(request.headers["content-type"] === "application/json" ? "{}" : undefined);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

type JsonSpan = { traceId: string; name: string; attributes: { key: string; value: Record<string, unknown> }[] };

function jsonSpans(requests: readonly Received[]): JsonSpan[] {
  return requests.flatMap((r) =>
    (JSON.parse(r.body.toString("utf8")) as { resourceSpans: { scopeSpans: { spans: JsonSpan[] }[] }[] }).resourceSpans.flatMap((rs) =>
      rs.scopeSpans.flatMap((s) => s.spans),
    ),
  );
}

function attribute(span: JsonSpan, key: string): unknown {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
}

describe.each(["http/json", "http/protobuf"])("OTLP/HTTP export, %s (CONTRACT §13)", (protocol) => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;
  let client: TimerClient;
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>;

  beforeAll(async () => {
    receiver = await otlpReceiver();
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_BSP_SCHEDULE_DELAY: "100",
    });
    client = await TimerClient.connect(nats.url);
  });

  afterAll(async () => {
    await client?.close();
    await service?.dispose();
    await nats?.dispose();
    receiver?.server.close();
  });

  it("exports a span for the stored command and one for its event, in the command's trace, with the attributes", async () => {
    const id = uniqueId("exported");
    const h = natsHeaders();
    h.set("traceparent", `00-${TRACE_ID}-00f067aa0ba902b7-01`);
    const body = JSON.stringify({
      id: uniqueId("cmd"),
      type: "ScheduleTimer",
      tenantId: TENANT,
      timestampMs: Date.now(),
      payload: { tenantId: TENANT, serviceCallId: id, dueAt: new Date().toISOString() },
    });
    await jetstream(client.connection).publish(`timer.commands.schedule.${TENANT}`, new TextEncoder().encode(body), { headers: h });
    const event = await client.waitFor((e) => e.body.type === "DueTimeReached" && e.body.payload.serviceCallId === id, 30_000);
    expect(event.traceparent).toContain(TRACE_ID);
    if (protocol === "http/json") {
      await eventually(
        () => expect(jsonSpans(receiver.requests).filter((s) => attribute(s, "timer.service_call_id") === id)).toHaveLength(2),
        20_000,
      );
      const spans = jsonSpans(receiver.requests).filter((s) => attribute(s, "timer.service_call_id") === id);
      for (const span of spans) {
        expect(span.traceId.toLowerCase()).toBe(TRACE_ID);
        expect(attribute(span, "messaging.system")).toBe("nats");
        expect(attribute(span, "timer.tenant_id")).toBe(TENANT);
      }
      const sent = spans.find((s) => attribute(s, "messaging.destination.name") === `timer.events.due.${TENANT}`)!;
      expect(Number(attribute(sent, "timer.generation"))).toBe(1);
      expect(attribute(sent, "timer.late_ms")).toBeDefined();
      expect(attribute(sent, "messaging.message.id")).toBe(event.msgId);
      expect(event.traceparent!.split("-")[2]).toBe(String((sent as unknown as { spanId: string }).spanId).toLowerCase());
    } else {
      // Protobuf: strings travel as they are, the trace id as its 16 raw bytes.
      await eventually(() => expect(receiver.requests.some((r) => r.body.includes(Buffer.from(id)))).toBe(true), 20_000);
      const request = receiver.requests.find((r) => r.body.includes(Buffer.from(id)))!;
      expect(request.contentType).toBe("application/x-protobuf");
      expect(request.body.includes(Buffer.from(TRACE_ID, "hex"))).toBe(true);
      for (const key of [
        "messaging.system",
        "messaging.destination.name",
        "messaging.message.id",
        "timer.tenant_id",
        "timer.generation",
        "timer.late_ms",
      ]) {
        expect(request.body.includes(Buffer.from(key)), key).toBe(true);
      }
    }
  });
});

describe("OTLP collector unreachable (CONTRACT §13)", () => {
  it("leaves firing unaffected", async () => {
    const nats = await NatsServerProcess.start();
    const closed = await otlpReceiver();
    closed.server.close();
    const service = await TimerServiceProcess.start(nats.url, { OTEL_EXPORTER_OTLP_ENDPOINT: closed.url, OTEL_BSP_SCHEDULE_DELAY: "50" });
    const client = await TimerClient.connect(nats.url);
    try {
      const ids = Array.from({ length: 20 }, () => uniqueId("down"));
      for (const id of ids) await client.schedule(TENANT, id, new Date().toISOString());
      for (const id of ids) await client.waitFor((e) => e.body.type === "DueTimeReached" && e.body.payload.serviceCallId === id, 30_000);
      const stopped = await service.kill("SIGTERM");
      expect(stopped.code).toBe(0);
    } finally {
      await client.close();
      await service.dispose();
      await nats.dispose();
    }
  });
});
