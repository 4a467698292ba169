import { afterEach, describe, expect, it, vi } from "vitest";
import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base";
import { OtelTracing } from "../../../src/adapters/tracing/otel-tracing.js";
import { otelExportConfigured } from "../../../src/adapters/tracing/otel-env.js";

const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, fatal: () => undefined };
const TRACE = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", traceFlags: 1, traceState: "k=v", spanId: "00f067aa0ba902b7" };

/** A collector that hangs while down (each export waits), and takes spans again when back up. */
class FlakyCollector implements SpanExporter {
  readonly received: ReadableSpan[] = [];
  private held: { spans: ReadableSpan[]; done: (result: ExportResult) => void }[] = [];
  down = true;

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    if (this.down) this.held.push({ spans, done });
    else {
      this.received.push(...spans);
      done({ code: ExportResultCode.SUCCESS });
    }
  }

  comeBack(): void {
    this.down = false;
    for (const { spans, done } of this.held.splice(0)) {
      this.received.push(...spans);
      done({ code: ExportResultCode.SUCCESS });
    }
  }

  async shutdown(): Promise<void> {}
  async forceFlush(): Promise<void> {}
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("OpenTelemetry spans (CONTRACT §13)", () => {
  it("starts only with an OTLP endpoint set, and not when the SDK is disabled", () => {
    expect(otelExportConfigured({})).toBe(false);
    expect(otelExportConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe(true);
    expect(otelExportConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" })).toBe(true);
    expect(otelExportConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" })).toBe(false);
  });

  it("records a command span and an event span in the command's trace, the event's header naming the event span", async () => {
    const collector = new FlakyCollector();
    collector.down = false;
    const tracing = new OtelTracing({ OTEL_SERVICE_NAME: "timers-under-test" }, silent, collector);
    const command = tracing.startCommand(TRACE, {
      subject: "timer.commands.schedule.acme",
      messageId: "m1",
      tenantId: "acme",
      serviceCallId: "c1",
    });
    command.end("accepted");
    let traceparent = "";
    await tracing.publishEvent(
      command.trace,
      { subject: "timer.events.due.acme", messageId: "due:1", tenantId: "acme", serviceCallId: "c1", generation: 1, lateMs: 3 },
      async (headers) => {
        traceparent = headers.traceparent;
        expect(headers.tracestate).toBe("k=v");
      },
    );
    await tracing.shutdown();
    const [commandSpan, eventSpan] = collector.received;
    expect(commandSpan!.spanContext().traceId).toBe(TRACE.traceId);
    expect(commandSpan!.parentSpanContext?.spanId).toBe(TRACE.spanId);
    expect(eventSpan!.parentSpanContext?.spanId).toBe(commandSpan!.spanContext().spanId);
    expect(traceparent).toBe(`00-${TRACE.traceId}-${eventSpan!.spanContext().spanId}-01`);
    expect(eventSpan!.attributes).toMatchObject({
      "messaging.system": "nats",
      "messaging.destination.name": "timer.events.due.acme",
      "messaging.message.id": "due:1",
      "timer.tenant_id": "acme",
      "timer.service_call_id": "c1",
      "timer.generation": 1,
      "timer.late_ms": 3,
    });
    expect(eventSpan!.resource.attributes["service.name"]).toBe("timers-under-test");
  });

  it("starts a new trace with the chosen id when the timer has no span to hang under", async () => {
    const collector = new FlakyCollector();
    collector.down = false;
    const tracing = new OtelTracing({}, silent, collector);
    const trace = tracing.newTrace();
    await tracing.publishEvent(trace, { subject: "timer.events.due.acme", tenantId: "acme" }, async () => undefined);
    await tracing.shutdown();
    expect(collector.received[0]!.spanContext().traceId).toBe(trace.traceId);
    expect(collector.received[0]!.resource.attributes["service.name"]).toBe("timer-service");
  });

  it("keeps memory bounded while the collector is down: publishing goes on, spans beyond the queue are dropped", async () => {
    vi.stubEnv("OTEL_BSP_MAX_QUEUE_SIZE", "100");
    vi.stubEnv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "10");
    vi.stubEnv("OTEL_BSP_SCHEDULE_DELAY", "1");
    const collector = new FlakyCollector();
    const tracing = new OtelTracing({}, silent, collector);
    let published = 0;
    for (let i = 0; i < 20_000; i++) {
      await tracing.publishEvent(TRACE, { subject: "timer.events.due.acme", tenantId: "acme" }, async () => void published++);
    }
    expect(published).toBe(20_000);
    collector.comeBack();
    await tracing.shutdown();
    // The queue and the batch that was in flight when the collector went away; the rest was dropped.
    expect(collector.received.length).toBeGreaterThan(0);
    expect(collector.received.length).toBeLessThanOrEqual(100 + 10);
  });

  it("shuts down without waiting for a collector that never answers", async () => {
    const collector = new FlakyCollector();
    const tracing = new OtelTracing({}, silent, collector);
    await tracing.publishEvent(TRACE, { subject: "s", tenantId: "acme" }, async () => undefined);
    await expect(tracing.shutdown()).resolves.toBeUndefined();
  });
});
