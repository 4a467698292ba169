import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from "@opentelemetry/api";
import { TraceState } from "@opentelemetry/core";
import { OTLPTraceExporter as OtlpJsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as OtlpProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor, type IdGenerator, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import type { TraceContext } from "../../domain/trace-context.js";
import type { Logger } from "../../app/logger.js";
import type { CommandSpan, TimerSpanAttributes, TimerTracing, TraceHeaders } from "../../app/timer-tracing.js";
import { eventHeaders } from "./header-tracing.js";
import { randomSpanId, randomTraceId } from "./trace-ids.js";

const DEFAULT_SERVICE_NAME = "timer-service";
const SAMPLED = 1;
/** Shutdown must not wait out an unreachable collector: the service has a 10 s stop budget in all. */
const SHUTDOWN_FLUSH_MS = 2_000;

/** `http/protobuf` (the default) or `http/json`; the exporters read the endpoint, headers and time-out themselves. */
function otlpExporter(env: NodeJS.ProcessEnv, logger: Logger): SpanExporter {
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || "http/protobuf").trim();
  if (protocol === "http/json") return new OtlpJsonExporter();
  if (protocol !== "http/protobuf") logger.warn({ protocol }, "OTLP protocol not supported; exporting spans with http/protobuf");
  return new OtlpProtobufExporter();
}

/**
 * Lets a span be the root of a trace whose id was chosen before it (the trace a command without
 * `traceparent` starts, stored with its timer): the SDK asks for the trace id right when the span
 * starts, synchronously, so the id handed over just before is the one it takes.
 */
class ChosenTraceIds implements IdGenerator {
  next: string | undefined;

  generateTraceId(): string {
    const chosen = this.next;
    this.next = undefined;
    return chosen ?? randomTraceId();
  }

  generateSpanId(): string {
    return randomSpanId();
  }
}

/**
 * Spans over OTLP/HTTP with the OpenTelemetry SDK, configured by the standard `OTEL_*` variables
 * (sampler, batch processor limits, endpoint, protocol, service name). The batch processor's queue
 * is bounded (OTEL_BSP_MAX_QUEUE_SIZE): with the collector down spans are dropped, never piled up.
 */
export class OtelTracing implements TimerTracing {
  private readonly provider: BasicTracerProvider;
  private readonly tracer: Tracer;
  private readonly ids = new ChosenTraceIds();

  constructor(env: NodeJS.ProcessEnv, logger: Logger, exporter: SpanExporter = otlpExporter(env, logger)) {
    const detected = detectResources({ detectors: [envDetector] });
    const serviceName = env.OTEL_SERVICE_NAME?.trim() || DEFAULT_SERVICE_NAME;
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ "service.name": serviceName }).merge(detected),
      idGenerator: this.ids,
      spanProcessors: [new BatchSpanProcessor(exporter)],
    });
    this.tracer = this.provider.getTracer("timer-service");
  }

  newTrace(): TraceContext {
    return { traceId: randomTraceId(), traceFlags: SAMPLED, traceState: null, spanId: null };
  }

  startCommand(context: TraceContext, attributes: TimerSpanAttributes): CommandSpan {
    const span = this.start(
      `process ${attributes.subject.split(".").at(-2) ?? "command"}`,
      SpanKind.CONSUMER,
      context,
      spanAttributes(attributes, "process"),
    );
    const own = span.spanContext();
    return {
      trace: { ...context, spanId: own.spanId },
      end: (outcome) => {
        span.setAttribute("timer.outcome", outcome);
        if (outcome === "rejected") span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
        span.end();
      },
    };
  }

  async publishEvent<T>(
    context: TraceContext | undefined,
    attributes: TimerSpanAttributes,
    publish: (headers: TraceHeaders) => Promise<T>,
  ): Promise<T> {
    const timerTrace = context ?? this.newTrace();
    const span = this.start(
      `send ${attributes.subject.split(".").at(-2) ?? "event"}`,
      SpanKind.PRODUCER,
      timerTrace,
      spanAttributes(attributes, "send"),
    );
    try {
      // The header carries the event span's id; trace-id, flags and tracestate are the timer's (§13).
      return await publish(eventHeaders(timerTrace, span.spanContext().spanId));
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      throw error;
    } finally {
      span.end();
    }
  }

  async shutdown(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, SHUTDOWN_FLUSH_MS);
    });
    await Promise.race([this.provider.shutdown().catch(() => undefined), deadline]);
    clearTimeout(timer);
  }

  private start(name: string, kind: SpanKind, context: TraceContext, attributes: Attributes): Span {
    let parent: Context = ROOT_CONTEXT;
    if (context.spanId === null) this.ids.next = context.traceId;
    else {
      parent = trace.setSpanContext(ROOT_CONTEXT, {
        traceId: context.traceId,
        spanId: context.spanId,
        traceFlags: context.traceFlags,
        isRemote: true,
        ...(context.traceState === null ? {} : { traceState: new TraceState(context.traceState) }),
      });
    }
    const span = this.tracer.startSpan(name, { kind, attributes }, parent);
    this.ids.next = undefined;
    return span;
  }
}

/** Assigned member by member in one object: spreads of optional members cost a copy each, per span. */
function spanAttributes(a: TimerSpanAttributes, operation: "process" | "send"): Attributes {
  const attributes: Attributes = { "messaging.system": "nats", "messaging.destination.name": a.subject };
  if (a.messageId !== undefined) attributes["messaging.message.id"] = a.messageId;
  attributes["timer.tenant_id"] = a.tenantId;
  if (a.serviceCallId !== undefined) attributes["timer.service_call_id"] = a.serviceCallId;
  if (a.generation !== undefined) attributes["timer.generation"] = a.generation;
  if (a.lateMs !== undefined) attributes["timer.late_ms"] = a.lateMs;
  attributes["messaging.operation.type"] = operation;
  return attributes;
}
