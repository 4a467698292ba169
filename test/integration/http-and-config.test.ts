import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AckPolicy, RetentionPolicy, StorageType, type ConsumerConfig, type StreamConfig } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient } from "../support/timer-client.js";
import { freePort } from "../support/free-port.js";
import { commandsSeries, eventually, fromNow, manager, scrapeMetrics, uniqueId } from "./integration-support.js";

const REPO_ROOT = resolve(import.meta.dirname, "../..");

/** CONTRACT §4 and §5: HTTP endpoints, metrics, configuration, custom and operator-made topology, signals, logs. */
describe("HTTP, configuration and operation", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;
  let client: TimerClient;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url); // default polling interval and names
    client = await TimerClient.connect(nats.url);
  });

  afterAll(async () => {
    await client?.close();
    await service?.dispose();
    await nats?.dispose();
  });

  describe("HTTP", () => {
    it("when the service runs, then GET /healthz is 200 and GET /readyz is 200 with every check passing", async () => {
      const health = await fetch(`${service.baseUrl}/healthz`);
      expect(health.status).toBe(200);

      const ready = await fetch(`${service.baseUrl}/readyz`);
      expect(ready.status).toBe(200);
      const body = (await ready.json()) as { checks?: Record<string, unknown> };
      expect(body.checks).toBeTypeOf("object");
      expect(Object.keys(body.checks!).length).toBeGreaterThan(0);
      for (const [name, ok] of Object.entries(body.checks!)) expect(ok, `check ${name}`).toBe(true);
    });

    it("when GET /metrics, then every metric of CONTRACT §5 is exposed in Prometheus text format with its type", async () => {
      const tenantId = "http-metrics";
      const serviceCallId = uniqueId("metrics");
      await client.schedule(tenantId, serviceCallId, fromNow(0));
      await client.waitForDue(tenantId, serviceCallId);

      const response = await fetch(`${service.baseUrl}/metrics`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toMatch(/^text\/plain/);
      const text = await response.text();
      const expected: Record<string, string> = {
        timer_commands_received_total: "counter",
        timer_schedules_processed_total: "counter",
        timer_polling_duration_seconds: "histogram",
        timer_fire_lag_seconds: "histogram",
        timer_schedules_pending: "gauge",
        timer_last_poll_timestamp_seconds: "gauge",
        timer_publish_failures_total: "counter",
      };
      for (const [name, type] of Object.entries(expected)) {
        expect(text, `# TYPE of ${name}`).toMatch(new RegExp(`^# TYPE ${name.replace(/_total$/, "(_total)?")} ${type}$`, "m"));
      }
      await eventually(async () => {
        const samples = await scrapeMetrics(service);
        expect(samples.get(commandsSeries("ScheduleTimer", "accepted"))).toBeGreaterThanOrEqual(1);
        expect(samples.get("timer_schedules_processed_total")).toBeGreaterThanOrEqual(1);
        expect(samples.get("timer_fire_lag_seconds_count")).toBeGreaterThanOrEqual(1);
        expect(samples.get("timer_polling_duration_seconds_count")).toBeGreaterThanOrEqual(1);
        expect(samples.has("timer_publish_failures_total")).toBe(true);
        expect(samples.has("timer_schedules_pending")).toBe(true);
        expect(samples.get("timer_last_poll_timestamp_seconds")! * 1000).toBeGreaterThan(Date.now() - 60_000);
      });
    });

    it("when an unknown path is requested, then 404; when /readyz is POSTed, then 405", async () => {
      expect((await fetch(`${service.baseUrl}/nope`)).status).toBe(404);
      expect((await fetch(`${service.baseUrl}/`)).status).toBe(404);
      expect((await fetch(`${service.baseUrl}/readyz`, { method: "POST" })).status).toBe(405);
      expect((await fetch(`${service.baseUrl}/healthz`, { method: "DELETE" })).status).toBe(405);
    });

    it("when the broker cannot be reached, then /healthz is 200 and /readyz is 503 (and the database folder was created)", async () => {
      const dir = mkdtempSync(join(tmpdir(), "timer-nested-"));
      const dbPath = join(dir, "not", "yet", "there", "timer.db");
      // SQLite even with TEST_TIMER_STORE=postgres: the creation of the database folder is SQLite's.
      const unreachable = await TimerServiceProcess.start(
        `nats://127.0.0.1:${await freePort()}`,
        { TIMER_STORE: "sqlite", TIMER_DB_PATH: dbPath },
        { waitReady: false },
      );
      try {
        await eventually(async () => expect((await fetch(`${unreachable.baseUrl}/healthz`)).status).toBe(200));
        const ready = await fetch(`${unreachable.baseUrl}/readyz`);
        expect(ready.status).toBe(503);
        // HTTP listens before the store opens: the folder comes a moment after /healthz answers.
        await eventually(() => expect(existsSync(dbPath)).toBe(true));
      } finally {
        await unreachable.dispose();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe("configuration", () => {
    const invalid: Record<string, string>[] = [
      { TIMER_BATCH_SIZE: "0" },
      { TIMER_BATCH_SIZE: "10001" },
      { TIMER_POLLING_INTERVAL: "abc" },
      { TIMER_POLLING_INTERVAL: "9" },
      { TIMER_POLLING_INTERVAL: "3600001" },
      { TIMER_MAX_HORIZON_DAYS: "0" },
      { TIMER_MAX_HORIZON_DAYS: "1.5" },
      { TIMER_SUBJECT_PREFIX: "a.b" },
      { TIMER_SUBJECT_PREFIX: "x".repeat(33) },
      { TIMER_HTTP_PORT: "70000" },
      { TIMER_HTTP_PORT: "-1" },
      { TIMER_LOG_LEVEL: "loud" },
      { TIMER_COMMANDS_STREAM: "has space" },
      { TIMER_EVENTS_STREAM: "a*b" },
      { TIMER_CONSUMER: "a.b" },
    ];

    // Concurrent: each case is a short-lived node process, mostly start-up time.
    it.concurrent.for(invalid)(
      "when the configuration is invalid (%o), then the process exits non-zero quickly with a message naming the variable",
      async (bad, { expect }) => {
        const variable = Object.keys(bad)[0]!;
        const result = await runService({ ...bad });
        expect(result.timedOut, `still running after 10 s; output: ${result.output}`).toBe(false);
        expect(result.code).not.toBe(0);
        expect(result.code).not.toBeNull();
        expect(result.output).toContain(variable);
      },
    );
  });

  describe("topology", () => {
    it("when the subject prefix, stream and consumer names are customised, then the service works end to end under those names", async () => {
      const prefix = "acme_timer";
      const names = {
        TIMER_SUBJECT_PREFIX: prefix,
        TIMER_COMMANDS_STREAM: "ACME_COMMANDS",
        TIMER_EVENTS_STREAM: "ACME_EVENTS",
        TIMER_CONSUMER: "acme-consumer",
      };
      // Also: a comma-separated broker list whose first server is down.
      const brokers = `nats://127.0.0.1:${await freePort()},${nats.url}`;
      const custom = await TimerServiceProcess.start(nats.url, { ...names, TIMER_POLLING_INTERVAL: "200", TIMER_BROKER_URL: brokers });
      const acme = await TimerClient.connect(nats.url, prefix);
      try {
        const serviceCallId = uniqueId("custom");
        await acme.schedule("t", serviceCallId, fromNow(0), { data: { custom: true } });
        const event = await acme.waitForDue("t", serviceCallId);
        expect(event.subject).toBe(`${prefix}.events.due.t`);
        expect(event.body.payload.data).toEqual({ custom: true });

        await acme.publishRaw(`${prefix}.commands.schedule.t`, "not json");
        const rejection = await acme.waitForRejection(`${prefix}.commands.schedule.t`);
        expect(rejection.subject).toBe(`${prefix}.events.rejected.t`);
        expect(rejection.body.payload.code).toBe("INVALID_JSON");

        const jsm = await manager(acme);
        expect((await jsm.streams.info("ACME_COMMANDS")).config.subjects).toEqual([`${prefix}.commands.>`]);
        const events = await jsm.streams.info("ACME_EVENTS");
        expect(events.config.subjects).toEqual([`${prefix}.events.>`]);
        expect(events.config.duplicate_window).toBeGreaterThanOrEqual(120 * 1e9);
        expect((await jsm.consumers.info("ACME_COMMANDS", "acme-consumer")).config.ack_policy).toBe(AckPolicy.Explicit);
        const stored = await jsm.streams.getMessage("ACME_EVENTS", { last_by_subj: `${prefix}.events.due.t` });
        expect(stored?.json()).toEqual(event.body);
        // The default-named service did not see any of it.
        expect(client.events.filter((e) => e.body.payload?.serviceCallId === serviceCallId)).toEqual([]);

        expect(await custom.kill("SIGINT")).toEqual({ code: 0, signal: null });
      } finally {
        await acme.close();
        await custom.dispose();
      }
    });

    it("when an operator created the streams and the consumer beforehand with other limits, then the service uses them as they are and works", async () => {
      const prefix = "ops";
      const jsm = await manager(client);
      const commandsConfig: Partial<StreamConfig> & { name: string } = {
        name: "OPS_COMMANDS",
        subjects: [`${prefix}.commands.>`],
        retention: RetentionPolicy.Limits,
        storage: StorageType.Memory,
        max_msgs: 1_000,
        max_age: nanos(3_600_000),
      };
      const eventsConfig: Partial<StreamConfig> & { name: string } = {
        name: "OPS_EVENTS",
        subjects: [`${prefix}.events.>`],
        retention: RetentionPolicy.Limits,
        storage: StorageType.Memory,
        max_msgs: 500,
        duplicate_window: nanos(30_000),
      };
      const consumerConfig: Partial<ConsumerConfig> = {
        durable_name: "ops-consumer",
        ack_policy: AckPolicy.Explicit,
        ack_wait: nanos(10_000),
        max_deliver: 50,
        max_ack_pending: 100,
      };
      await jsm.streams.add(commandsConfig);
      await jsm.streams.add(eventsConfig);
      await jsm.consumers.add("OPS_COMMANDS", consumerConfig);
      const before = {
        commands: (await jsm.streams.info("OPS_COMMANDS")).config,
        events: (await jsm.streams.info("OPS_EVENTS")).config,
        consumer: (await jsm.consumers.info("OPS_COMMANDS", "ops-consumer")).config,
      };

      const ops = await TimerServiceProcess.start(nats.url, {
        TIMER_SUBJECT_PREFIX: prefix,
        TIMER_COMMANDS_STREAM: "OPS_COMMANDS",
        TIMER_EVENTS_STREAM: "OPS_EVENTS",
        TIMER_CONSUMER: "ops-consumer",
        TIMER_LOG_LEVEL: "warn",
      });
      const opsClient = await TimerClient.connect(nats.url, prefix);
      try {
        const serviceCallId = uniqueId("ops");
        await opsClient.schedule("t", serviceCallId, fromNow(200), { correlationId: "ops-corr" });
        const event = await opsClient.waitForDue("t", serviceCallId);
        expect(event.subject).toBe(`${prefix}.events.due.t`);
        expect(event.body.correlationId).toBe("ops-corr");
        await opsClient.cancel("t", uniqueId("ops-unknown"));
        await opsClient.publishRaw(`${prefix}.commands.cancel.t`, "[]");
        expect((await opsClient.waitForRejection(`${prefix}.commands.cancel.t`)).body.payload.code).toBe("INVALID_ENVELOPE");

        const after = {
          commands: (await jsm.streams.info("OPS_COMMANDS")).config,
          events: (await jsm.streams.info("OPS_EVENTS")).config,
          consumer: (await jsm.consumers.info("OPS_COMMANDS", "ops-consumer")).config,
        };
        expect(after).toEqual(before);
        expect(after.commands.retention).toBe(RetentionPolicy.Limits);
        expect(after.events.duplicate_window).toBe(nanos(30_000));

        // SIGTERM: clean exit, code 0, well within 10 s.
        const startedAt = Date.now();
        const exit = await ops.kill("SIGTERM");
        const tookMs = Date.now() - startedAt;
        console.info(`SIGTERM → exit in ${tookMs} ms`);
        expect(exit).toEqual({ code: 0, signal: null });
        expect(tookMs).toBeLessThan(10_000);

        // TIMER_LOG_LEVEL=warn: the rejection was logged, nothing below warn was.
        const levels = ops.logs().map((line) => line.level);
        expect(levels).toContain("warn");
        expect(levels.filter((level) => level === "info" || level === "debug" || level === "trace")).toEqual([]);
      } finally {
        await opsClient.close();
        await ops.dispose();
      }
    });
  });

  describe("logs", () => {
    it("when the service has run and handled commands, then its stdout is pino JSON lines", async () => {
      await client.publishRaw("timer.commands.schedule.logs", "not json");
      await client.waitForRejection("timer.commands.schedule.logs");
      const lines = await eventually(() => {
        const current = service.logLines.filter((line) => line.trim() !== "");
        expect(current.some((line) => line.includes('"warn"'))).toBe(true);
        return current;
      });
      expect(lines.length).toBeGreaterThan(1);
      for (const line of lines) {
        let parsed: unknown;
        expect(() => (parsed = JSON.parse(line)), `not JSON: ${line}`).not.toThrow();
        expect(parsed, line).toBeTypeOf("object");
        const record = parsed as Record<string, unknown>;
        expect(record.level, line).toBeDefined();
        expect(record.time, line).toBeDefined();
        expect(typeof record.msg, line).toBe("string");
      }
    });
  });
});

/** Runs `node dist/main.js` with a clean TIMER_* environment plus `env`; kills it after 10 s. */
async function runService(env: Record<string, string>): Promise<{ code: number | null; output: string; timedOut: boolean }> {
  const dataDir = mkdtempSync(join(tmpdir(), "timer-config-"));
  const base = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("TIMER_") && !key.startsWith("npm_")));
  const child = spawn(process.execPath, ["dist/main.js"], {
    cwd: REPO_ROOT,
    env: {
      ...base,
      // A broker nobody listens on: a service that accepted the configuration would wait for it.
      TIMER_BROKER_URL: `nats://127.0.0.1:${await freePort()}`,
      TIMER_DB_PATH: join(dataDir, "timer.db"),
      TIMER_HTTP_PORT: "0",
      TIMER_HTTP_HOST: "127.0.0.1",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, 10_000);
  const code = await new Promise<number | null>((resolveExit) => child.once("close", (exitCode) => resolveExit(exitCode)));
  clearTimeout(timer);
  rmSync(dataDir, { recursive: true, force: true });
  return { code, output, timedOut };
}
