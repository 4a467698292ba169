import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { freePort } from "../support/free-port.js";
import { NatsServerProcess } from "../support/nats-server.js";
import { Child, requireBinary, startService, waitFor, type RunningService } from "./ops-support.js";

// The built service (`npm run build`, which `npm test` runs first) scraped by a real Prometheus
// (Debian's `prometheus` package): the metrics of CONTRACT §5 reach Prometheus and change with
// the commands the service handles.

interface Sample {
  readonly metric: Record<string, string>;
  readonly value: number;
}

describe("Prometheus scraping the built service", () => {
  let nats: NatsServerProcess | undefined;
  let nc: NatsConnection | undefined;
  let service: RunningService | undefined;
  let prometheus: Child | undefined;
  let promDir: string | undefined;
  let promUrl: string;

  async function query(promql: string): Promise<Sample[]> {
    const response = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(promql)}`);
    const body = (await response.json()) as {
      status: string;
      data?: { result: { metric: Record<string, string>; value: [number, string] }[] };
      error?: string;
    };
    if (body.status !== "success" || body.data === undefined) throw new Error(`query ${promql}: ${body.error}`);
    return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  }

  /** The first sample of `promql` that satisfies `accept`, once Prometheus has scraped one. */
  function sampleOf(promql: string, accept: (s: Sample) => boolean = () => true): Promise<Sample> {
    return waitFor(`Prometheus returned no sample of ${promql} as expected`, [prometheus!], async () => (await query(promql)).find(accept));
  }

  beforeAll(async () => {
    const prometheusBin = requireBinary("prometheus", "install it with `apt-get install -y prometheus`");
    nats = await NatsServerProcess.start();
    service = await startService(nats.url, { TIMER_POLLING_INTERVAL: "250" });

    promDir = mkdtempSync(join(tmpdir(), "timer-ops-prom-"));
    const configFile = join(promDir, "prometheus.yml");
    // Same job name as deploy/prometheus/*.yml, so the alert rules' selectors match these series.
    writeFileSync(
      configFile,
      [
        "global:",
        "  scrape_interval: 1s",
        "  evaluation_interval: 1s",
        "scrape_configs:",
        "  - job_name: timer-service",
        "    static_configs:",
        `      - targets: ["127.0.0.1:${service.httpPort}"]`,
        "",
      ].join("\n"),
    );
    const promPort = await freePort();
    promUrl = `http://127.0.0.1:${promPort}`;
    prometheus = new Child(
      "prometheus",
      spawn(
        prometheusBin,
        [`--config.file=${configFile}`, `--storage.tsdb.path=${join(promDir, "data")}`, `--web.listen-address=127.0.0.1:${promPort}`],
        { stdio: ["ignore", "pipe", "pipe"] },
      ),
    );
    await waitFor("Prometheus did not become ready", [prometheus], async () =>
      (await fetch(`${promUrl}/-/ready`)).status === 200 ? true : undefined,
    );
  });

  afterAll(async () => {
    await nc?.close();
    await prometheus?.stop();
    await service?.dispose();
    await nats?.dispose();
    if (promDir !== undefined) rmSync(promDir, { recursive: true, force: true });
  });

  it("when Prometheus scrapes the service, then the target is up under job timer-service", async () => {
    const up = await sampleOf('up{job="timer-service"}', (s) => s.value === 1);

    expect(up.metric.instance).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it("when no timer was ever scheduled, then timer_schedules_pending is 0", async () => {
    const pending = await sampleOf('timer_schedules_pending{job="timer-service"}');

    expect(pending.value).toBe(0);
  });

  it("when polls run, then timer_last_poll_timestamp_seconds follows the clock", async () => {
    const lastPoll = await sampleOf("timer_last_poll_timestamp_seconds", (s) => s.value > 0);

    expect(Math.abs(Date.now() / 1000 - lastPoll.value)).toBeLessThan(30);
  });

  it("when a ScheduleTimer due in an hour is accepted, then Prometheus sees timer_schedules_pending 1", async () => {
    nc = await connect({ servers: nats!.url });
    const dueAt = new Date(Date.now() + 3_600_000).toISOString();
    await jetstream(nc).publish(
      "timer.commands.schedule.acme",
      JSON.stringify({
        id: "ops-scrape-1",
        type: "ScheduleTimer",
        tenantId: "acme",
        timestampMs: Date.now(),
        payload: { tenantId: "acme", serviceCallId: "scrape-1", dueAt },
      }),
    );

    const pending = await sampleOf('timer_schedules_pending{job="timer-service"}', (s) => s.value === 1);
    const accepted = await sampleOf('timer_commands_received_total{type="ScheduleTimer", outcome="accepted"}', (s) => s.value === 1);

    expect(pending.value).toBe(1);
    expect(accepted.value).toBe(1);
  });

  it("when the service runs on Node, then the default process metrics are scraped too", async () => {
    const rss = await sampleOf('process_resident_memory_bytes{job="timer-service"}');
    const lag = await sampleOf('nodejs_eventloop_lag_seconds{job="timer-service"}');

    expect(rss.value).toBeGreaterThan(0);
    expect(lag.value).toBeGreaterThanOrEqual(0);
  });
});
