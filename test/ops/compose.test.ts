import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findBinary, repoRoot, runCommand } from "./ops-support.js";

// docker-compose 1.29 (Debian) validates the file offline, no Docker engine needed. CI installs
// it, so there a missing binary is a failure; on a developer machine the tests skip and say why.
const compose = findBinary("docker-compose");
const missing = "docker-compose is not on PATH (apt-get install -y docker-compose)";

function requireCompose(skip: (note?: string) => never): string {
  if (compose !== undefined) return compose;
  if (process.env.CI) throw new Error(`${missing}; CI must install it`);
  return skip(`skipped: ${missing}`);
}

/** `profiles` of each service in `docker-compose config` output (block YAML, two-space indents). */
function profilesByService(config: string): Record<string, string[]> {
  const services: Record<string, string[]> = {};
  const lines = config.split("\n");
  let inServices = false;
  let current: string | undefined;
  let inProfiles = false;
  for (const line of lines) {
    if (/^\S/.test(line)) inServices = line === "services:";
    if (!inServices) continue;
    const service = /^ {2}([\w.-]+):$/.exec(line);
    if (service !== null) {
      current = service[1]!;
      services[current] = [];
      inProfiles = false;
      continue;
    }
    if (current === undefined) continue;
    if (/^ {4}[\w.-]+:/.test(line)) inProfiles = line === "    profiles:";
    const item = /^ {4}- (\S+)$/.exec(line);
    if (inProfiles && item !== null) services[current]!.push(item[1]!);
  }
  return services;
}

describe("docker-compose.yml", () => {
  it("when docker-compose validates it, then it is a valid compose file", ({ skip }) => {
    const result = runCommand(requireCompose(skip), ["config", "-q"]);
    expect(result.code, result.output).toBe(0);
  });

  it("when docker-compose resolves it, then nats, timer-service, prometheus, grafana, jaeger and the postgres stack are defined", ({
    skip,
  }) => {
    const result = runCommand(requireCompose(skip), ["config", "--services"]);
    expect(result.code, result.output).toBe(0);
    expect(result.output.trim().split("\n").sort()).toEqual([
      "grafana",
      "jaeger",
      "nats",
      "postgres",
      "prometheus",
      "timer-service",
      "timer-service-pg-1",
      "timer-service-pg-2",
    ]);
  });

  it("when docker-compose resolves it, then grafana is under dashboards, jaeger under tracing and the postgres stack under postgres (all off by default)", ({
    skip,
  }) => {
    const result = runCommand(requireCompose(skip), ["config"]);
    expect(result.code, result.output).toBe(0);
    expect(profilesByService(result.output)).toEqual({
      grafana: ["dashboards"],
      jaeger: ["tracing"],
      nats: [],
      postgres: ["postgres"],
      prometheus: [],
      "timer-service": [],
      "timer-service-pg-1": ["postgres"],
      "timer-service-pg-2": ["postgres"],
    });
  });

  it("when the postgres profile resolves, then both replicas use Postgres and a consumer of their own", ({ skip }) => {
    const result = runCommand(requireCompose(skip), ["config"]);
    expect(result.code, result.output).toBe(0);
    for (const replica of ["timer-service-pg-1", "timer-service-pg-2"]) {
      const service = new RegExp(`^  ${replica}:\\n([\\s\\S]*?)(?=^  \\S|^\\S)`, "m").exec(result.output)?.[1] ?? "";
      expect(service).toMatch(/^ {6}TIMER_STORE: postgres$/m);
      expect(service).toMatch(/^ {6}TIMER_DATABASE_URL: postgres:\/\/\S+@postgres:5432\/\S+$/m);
      expect(service).toMatch(/^ {6}TIMER_CONSUMER: timer-service-pg$/m);
      expect(service).toMatch(/^ {6}TIMER_BROKER_URL: nats:\/\/nats:4222$/m);
    }
  });

  it("when .env.example holds host values, then the container still gets the broker, database and address it needs", ({ skip }) => {
    const result = runCommand(requireCompose(skip), ["config"]);
    expect(result.code, result.output).toBe(0);
    const timerService = /^ {2}timer-service:\n([\s\S]*?)(?=^ {2}\S|^\S)/m.exec(result.output)?.[1] ?? "";

    expect(timerService).toMatch(/^ {6}TIMER_BROKER_URL: nats:\/\/nats:4222$/m);
    expect(timerService).toMatch(/^ {6}TIMER_DB_PATH: \/data\/timer\.db$/m);
    expect(timerService).toMatch(/^ {6}TIMER_HTTP_HOST: 0\.0\.0\.0$/m);
    expect(timerService).toMatch(/^ {4}- timer-data:\/data(:rw)?$/m);
  });

  it("when read as text, then nats runs deploy/nats/nats-server.conf, which fsyncs before every ack (sync_interval: always)", () => {
    const text = readFileSync(join(repoRoot, "docker-compose.yml"), "utf8");
    expect(text).toMatch(/command: \["nats-server", "-c", "\/etc\/nats\/nats-server\.conf"\]/);
    expect(text).toMatch(/- \.\/deploy\/nats\/nats-server\.conf:\/etc\/nats\/nats-server\.conf:ro/);
    const conf = readFileSync(join(repoRoot, "deploy/nats/nats-server.conf"), "utf8");
    expect(conf).toMatch(/^\s*sync_interval: always\s*$/m);
    expect(conf).toMatch(/^\s*store_dir: \/data\s*$/m);
    expect(conf).toMatch(/^http_port: 8222$/m);
  });

  it("when read as text, then it has no top-level name: (docker-compose 1.x rejects it)", () => {
    const text = readFileSync(join(repoRoot, "docker-compose.yml"), "utf8");
    expect(text).not.toMatch(/^name:/m);
  });
});
