/**
 * traceOverhead: the cost of trace context and spans (CONTRACT §13) per command and per event, as
 * an A/B in one run. Trace context landed as one merge (TRACE_MERGE_COMMIT); its first parent
 * (BEFORE_TRACING_COMMIT) is main just before it, so the two differ by trace context alone. Five
 * services, each on its own broker and SQLite store, started once and kept for the whole scenario:
 * main before trace context, the trace merge with no OTEL_* variables (headers only) and exporting
 * spans, and this build the same two ways. Spans go over OTLP/HTTP protobuf to a receiver in the
 * bench process that answers 200 and drops them.
 *
 * In every round each service in turn ingests n ScheduleTimer commands (each with a `traceparent`,
 * due at one instant) and fires them as a burst, alone on the machine's share the bench leaves it.
 * The first round warms every service up (JIT, page cache) and is discarded; in the measured rounds
 * the variants alternate, the order rotated from round to round so that none is always first.
 * Figures: service CPU µs per command while ingesting and per event while firing, per round and
 * the median of each variant's measured rounds. The targets are the trace merge's against main
 * before it (trace context's own cost); this build's against main before trace context are
 * reported beside them (they hold every change since, the writer thread among them).
 * A round whose ingest ran past the due instant is reported and left out.
 *
 *   npm run bench -- --only traceOverhead            (50,000 timers, 1 warm-up + 3 measured rounds)
 *   npm run bench -- --quick --only traceOverhead    (5,000 timers, 1 + 2 rounds: a sanity run)
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { headers } from "@nats-io/transport-node";
import type { TimerServiceProcess } from "../../../test/support/timer-service-process.js";
import { ensureBaselineBuild } from "../baseline.js";
import {
  BenchClient,
  DueEventCollector,
  callId,
  loadAverage,
  median,
  round,
  scaled,
  startNats,
  startService,
  stopService,
  type BenchContext,
  type OutMessage,
  measureIngestThenFire,
} from "../harness.js";

/** The merge that brought trace context (W3C headers, OpenTelemetry spans) to main. */
export const TRACE_MERGE_COMMIT = "0b5d6f7";
/** Its first parent: main just before trace context. */
export const BEFORE_TRACING_COMMIT = "31f7815";

const VARIANTS = ["before", "traceHeaders", "traceExporting", "headersOnly", "exporting"] as const;
type Variant = (typeof VARIANTS)[number];
const SERVICE_LABEL: Record<Variant, string> = {
  before: "trace-before",
  traceHeaders: "trace-merge-headers",
  traceExporting: "trace-merge-otlp",
  headersOnly: "trace-headers",
  exporting: "trace-otlp",
};

const encoder = new TextEncoder();

/** An OTLP/HTTP receiver that reads every request to its end, answers 200 and keeps only counts. */
async function discardingReceiver(): Promise<{ url: string; counts: { requests: number; bytes: number }; close: () => void }> {
  const counts = { requests: 0, bytes: 0 };
  const server = createServer((request, response) => {
    counts.requests++;
    request.on("data", (chunk: Buffer) => (counts.bytes += chunk.length));
    request.on("end", () => {
      response.writeHead(200, { "content-type": "application/x-protobuf" });
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, counts, close: () => server.close() };
}

function schedules(n: number, tenantId: string, dueAtMs: number, roundNo: number): OutMessage[] {
  const dueAt = new Date(dueAtMs).toISOString();
  return Array.from({ length: n }, (_, i) => {
    const envelope = {
      id: `s-${i}`,
      type: "ScheduleTimer",
      tenantId,
      timestampMs: Date.now(),
      payload: { tenantId, serviceCallId: callId("t", i), dueAt },
    };
    const h = headers();
    const traceId = `${roundNo.toString(16).padStart(4, "0")}${(i + 1).toString(16).padStart(28, "a")}`;
    h.set("traceparent", `00-${traceId}-00f067aa0ba902b7-01`);
    return { subject: `timer.commands.schedule.${tenantId}`, data: encoder.encode(JSON.stringify(envelope)), headers: h };
  });
}

interface RoundFigures {
  readonly round: number;
  readonly warmUp: boolean;
  readonly valid: boolean;
  readonly ingestUs: number | undefined;
  readonly fireUs: number | undefined;
  /** The above by thread: the event loop, the busiest other thread (this build: the SQLite writer), the rest. */
  readonly ingestMainUs: number | undefined;
  readonly ingestSecondUs: number | undefined;
  readonly ingestRestUs: number | undefined;
  readonly fireMainUs: number | undefined;
  readonly fireSecondUs: number | undefined;
  readonly fireRestUs: number | undefined;
  readonly ingestSeconds: number | undefined;
  readonly fireSeconds: number | undefined;
  readonly loadAverage1m: number | undefined;
}

export async function traceOverhead(ctx: BenchContext): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 50_000);
  const measuredRounds = ctx.quick ? 2 : 3;
  const budgetMs = Math.max(15_000, Math.ceil(n / 2_000) * 1_000);
  const baseline = ensureBaselineBuild(BEFORE_TRACING_COMMIT);
  const merge = ensureBaselineBuild(TRACE_MERGE_COMMIT);
  ctx.log(
    `before = ${baseline.commitHash.slice(0, 12)}, trace merge = ${merge.commitHash.slice(0, 12)}; ${n} timers, 1 warm-up + ${measuredRounds} measured rounds`,
  );
  const receiver = await discardingReceiver();
  ctx.scope.defer(() => receiver.close());
  const exporting = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf" };
  const env: Record<Variant, Record<string, string>> = {
    before: {},
    traceHeaders: {},
    traceExporting: exporting,
    headersOnly: {},
    exporting,
  };
  const entries: Record<Variant, string | undefined> = {
    before: baseline.entry,
    traceHeaders: merge.entry,
    traceExporting: merge.entry,
    headersOnly: undefined,
    exporting: undefined,
  };

  const sqliteCtx: BenchContext = { ...ctx, store: "sqlite" };
  const services = {} as Record<Variant, { service: TimerServiceProcess; client: BenchClient }>;
  for (const variant of VARIANTS) {
    const nats = await startNats(ctx);
    const service = await startService(sqliteCtx, nats.url, SERVICE_LABEL[variant], env[variant], entries[variant]);
    services[variant] = { service, client: await BenchClient.connect(ctx, nats.url) };
  }

  const figures = Object.fromEntries(VARIANTS.map((variant) => [variant, []])) as unknown as Record<Variant, RoundFigures[]>;
  const runRound = async (variant: Variant, roundNo: number): Promise<void> => {
    const { service, client } = services[variant];
    const warmUp = roundNo === 0;
    const label = `${variant} ${warmUp ? "warm-up" : `round ${roundNo}`}`;
    const tenantId = `trace-${variant}-r${roundNo}`;
    const events = new DueEventCollector(ctx, client.nc, `timer.events.due.${tenantId}`);
    const dueAtMs = Date.now() + budgetMs;
    const { valid, ingest, fire, windows } = await measureIngestThenFire(
      client,
      events,
      { service: service.pid },
      { schedules: schedules(n, tenantId, dueAtMs, roundNo), dueAtMs, budgetMs, label },
    );
    if (!warmUp && ctx.profileDir !== undefined) {
      const serviceLabel = SERVICE_LABEL[variant];
      ctx.profileWindows.push({ label: serviceLabel, name: `traceOverhead ${label} ingest`, ...windows.ingest });
      ctx.profileWindows.push({ label: serviceLabel, name: `traceOverhead ${label} fire`, ...windows.fire });
    }
    const row: RoundFigures = {
      round: roundNo,
      warmUp,
      valid,
      ingestUs: ingest.serviceUsPerItem,
      fireUs: fire.serviceUsPerItem,
      ingestMainUs: ingest.serviceMainUsPerItem,
      ingestSecondUs: ingest.serviceSecondUsPerItem,
      ingestRestUs: ingest.serviceRestUsPerItem,
      fireMainUs: fire.serviceMainUsPerItem,
      fireSecondUs: fire.serviceSecondUsPerItem,
      fireRestUs: fire.serviceRestUsPerItem,
      ingestSeconds: ingest.wallS,
      fireSeconds: fire.wallS,
      loadAverage1m: loadAverage()[0],
    };
    figures[variant].push(row);
    ctx.log(
      `${label}: ingest ${row.ingestUs} µs/command (main ${row.ingestMainUs}, second ${row.ingestSecondUs}, rest ${row.ingestRestUs}), ` +
        `fire ${row.fireUs} µs/event (main ${row.fireMainUs}, second ${row.fireSecondUs}, rest ${row.fireRestUs}); load ${row.loadAverage1m}` +
        `${warmUp ? " (warm-up: discarded)" : ""}${valid ? "" : " (ingest ran past the due time: left out)"}`,
    );
  };

  const loadBefore = loadAverage();
  const order: string[] = [];
  for (let roundNo = 0; roundNo <= measuredRounds; roundNo++) {
    const shift = roundNo === 0 ? 0 : (roundNo - 1) % VARIANTS.length;
    for (let k = 0; k < VARIANTS.length; k++) {
      const variant = VARIANTS[(k + shift) % VARIANTS.length]!;
      order.push(`${roundNo === 0 ? "warm-up" : roundNo}:${variant}`);
      await runRound(variant, roundNo);
    }
  }
  const loadAfter = loadAverage();
  for (const variant of VARIANTS) await stopService(services[variant].service);

  const MEDIAN_FIELDS = [
    "ingestUs",
    "fireUs",
    "ingestMainUs",
    "ingestSecondUs",
    "ingestRestUs",
    "fireMainUs",
    "fireSecondUs",
    "fireRestUs",
  ] as const;
  const mediansOf = (variant: Variant): Partial<Record<(typeof MEDIAN_FIELDS)[number], number>> & { rounds: number } => {
    const measured = figures[variant].filter((r) => !r.warmUp && r.valid);
    const out: Partial<Record<(typeof MEDIAN_FIELDS)[number], number>> & { rounds: number } = { rounds: measured.length };
    for (const field of MEDIAN_FIELDS) {
      const value = median(measured.map((r) => r[field]).filter((v): v is number => v !== undefined));
      if (value !== undefined) out[field] = round(value, 1);
    }
    return out;
  };
  const medians = Object.fromEntries(VARIANTS.map((variant) => [variant, mediansOf(variant)])) as Record<
    Variant,
    ReturnType<typeof mediansOf>
  >;
  const ratio = (a: number | undefined, b: number | undefined): number | undefined =>
    a === undefined || b === undefined || b <= 0 ? undefined : round(a / b, 2);
  const versus = (variant: Variant) => ({
    ingest: ratio(medians[variant].ingestUs, medians.before.ingestUs),
    fire: ratio(medians[variant].fireUs, medians.before.fireUs),
  });
  const traceHeadersVsBefore = versus("traceHeaders");
  const traceExportingVsBefore = versus("traceExporting");
  const headersOnlyVsBefore = versus("headersOnly");
  const exportingVsBefore = versus("exporting");
  const shown = (variant: Variant, vs?: { ingest: number | undefined; fire: number | undefined }) =>
    `${variant} ${medians[variant].ingestUs} / ${medians[variant].fireUs}${vs === undefined ? "" : ` (${vs.ingest}× / ${vs.fire}×)`}`;
  ctx.log(
    `medians µs per command / event: ${shown("before")}, ${shown("traceHeaders", traceHeadersVsBefore)}, ${shown("traceExporting", traceExportingVsBefore)}; ` +
      `this build: ${shown("headersOnly", headersOnlyVsBefore)}, ${shown("exporting", exportingVsBefore)}; load average ${loadBefore.join(" ")} → ${loadAfter.join(" ")}`,
  );
  return {
    n,
    baselineCommit: baseline.commitHash.slice(0, 12),
    traceMergeCommit: merge.commitHash.slice(0, 12),
    warmUpRounds: 1,
    measuredRounds,
    order,
    medians,
    traceHeadersVsBefore,
    traceExportingVsBefore,
    headersOnlyVsBefore,
    exportingVsBefore,
    rounds: figures,
    otlpReceived: { ...receiver.counts },
    loadAverage: { before: loadBefore, after: loadAfter },
  };
}
