import { createServer } from "node:http";

/**
 * A stand-in for a trace collector where none can run: takes OTLP/HTTP JSON on /v1/traces and
 * prints one line per span (trace id, span id, parent, name, timer attributes). Run it with
 * `npx tsx scripts/tracing/otlp-receiver.ts [port]` and start the service with
 * OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 OTEL_EXPORTER_OTLP_PROTOCOL=http/json.
 */
type Value = Record<string, unknown>;
type Span = { traceId: string; spanId: string; parentSpanId?: string; name: string; attributes?: { key: string; value: Value }[] };
type Export = { resourceSpans?: { scopeSpans?: { spans?: Span[] }[] }[] };

const port = Number(process.argv[2] ?? 4318);

createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    if (request.url === "/v1/traces" && String(request.headers["content-type"]).startsWith("application/json")) {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Export;
      for (const span of (body.resourceSpans ?? []).flatMap((r) => (r.scopeSpans ?? []).flatMap((s) => s.spans ?? []))) {
        const attributes = Object.fromEntries((span.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]]));
        process.stdout.write(
          `${JSON.stringify({ traceId: span.traceId, spanId: span.spanId, parent: span.parentSpanId || null, name: span.name, attributes })}\n`,
        );
      }
    }
    response.writeHead(200, { "content-type": "application/json" });
    response.end("{}");
  });
}).listen(port, () => process.stderr.write(`OTLP/HTTP JSON receiver on :${port}/v1/traces\n`));
