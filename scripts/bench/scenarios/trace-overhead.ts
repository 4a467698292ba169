/**
 * traceOverhead: the cost of trace context and spans (CONTRACT §13) per command and per event. The
 * same n timers are ingested and fired as a burst by three services, one after the other, each on
 * its own broker and store: the build of commit 0fd4785 (before trace context), this build with no
 * OTEL_* variables (headers only), and this build exporting spans over OTLP/HTTP protobuf to a
 * receiver in the bench process that answers 200 and drops them. Commands carry a `traceparent`.
 * Figures: service CPU µs per command while ingesting, per event while firing.
 *
 *   npm run bench -- --only traceOverhead            (50,000 timers per variant)
 *   npm run bench -- --quick --only traceOverhead    (5,000: a sanity run)
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { headers } from "@nats-io/transport-node";
import { ensureBaselineBuild } from "../baseline.js";
import {
  BenchClient,
  DueEventCollector,
  callId,
  scaled,
  startNats,
  startService,
  type BenchContext,
  type OutMessage,
  measureIngestThenFire,
} from "../harness.js";

/** The last commit before trace context. */
export const BEFORE_TRACING_COMMIT = "0fd4785";
const encoder = new TextEncoder();

async function discardingReceiver(): Promise<{ url: string; close: () => void }> {
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      response.writeHead(200, { "content-type": "application/x-protobuf" });
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

export async function traceOverhead(ctx: BenchContext): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 50_000);
  const budgetMs = Math.max(15_000, Math.ceil(n / 2_000) * 1_000);
  const baseline = ensureBaselineBuild(BEFORE_TRACING_COMMIT);
  const receiver = await discardingReceiver();
  ctx.scope.defer(() => receiver.close());

  const variant = async (label: string, env: Record<string, string>, entry?: string) => {
    const nats = await startNats(ctx);
    const service = await startService(ctx, nats.url, `trace-${label}`, env, entry);
    const client = await BenchClient.connect(ctx, nats.url);
    const pids = { service: service.pid };
    const tenantId = `trace-${label}`;
    const events = new DueEventCollector(ctx, client.nc, `timer.events.due.${tenantId}`);
    const dueAtMs = Date.now() + budgetMs;
    const schedules: OutMessage[] = Array.from({ length: n }, (_, i) => {
      const envelope = {
        id: `s-${i}`,
        type: "ScheduleTimer",
        tenantId,
        timestampMs: Date.now(),
        payload: { tenantId, serviceCallId: callId("t", i), dueAt: new Date(dueAtMs).toISOString() },
      };
      const h = headers();
      h.set("traceparent", `00-${(i + 1).toString(16).padStart(32, "a")}-00f067aa0ba902b7-01`);
      return { subject: `timer.commands.schedule.${tenantId}`, data: encoder.encode(JSON.stringify(envelope)), headers: h };
    });
    const { valid, ingest, fire } = await measureIngestThenFire(client, events, pids, { schedules, dueAtMs, budgetMs, label });
    ctx.log(
      `${label}: ingest ${ingest.serviceUsPerItem} µs/command, fire ${fire.serviceUsPerItem} µs/event${valid ? "" : " (invalid: ingest ran past the due time)"}`,
    );
    return { valid, ingest, fire };
  };

  const before = await variant("before", {}, baseline.entry);
  const headersOnly = await variant("headers", {});
  const exporting = await variant("otlp", {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
  });
  const ratio = (a: Record<string, number>, b: Record<string, number>) =>
    Math.round((a.serviceUsPerItem! / b.serviceUsPerItem!) * 100) / 100;
  return {
    n,
    baselineCommit: baseline.commitHash.slice(0, 12),
    before,
    headersOnly,
    exporting,
    headersOnlyVsBefore: { ingest: ratio(headersOnly.ingest, before.ingest), fire: ratio(headersOnly.fire, before.fire) },
    exportingVsBefore: { ingest: ratio(exporting.ingest, before.ingest), fire: ratio(exporting.fire, before.fire) },
  };
}
