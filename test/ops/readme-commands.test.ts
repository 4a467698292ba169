import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { freePort } from "../support/free-port.js";

/**
 * Every shell command in the README is run here against a real nats-server and the real service,
 * or is shown to be run by CI or by a named test. A command this file does not know fails the
 * test, so a README change cannot add a command nobody has tried.
 */

const repoRoot = resolve(import.meta.dirname, "../..");
/** The README and the pages its detail moved to: their commands are checked alike. */
const README = ["README.md", "docs/testing.md", "docs/configuration.md", "docs/usage.md", "docs/operations/README.md"]
  .map((file) => readFileSync(join(repoRoot, file), "utf8"))
  .join("\n");
const CI_SCRIPT = readFileSync(join(repoRoot, ".ci/run"), "utf8");
const TOKEN = "readme-admin-token-0123456789";

/** The command lines of the README's sh blocks, comments and blank lines dropped. */
function readmeCommands(): string[] {
  const commands: string[] = [];
  for (const block of README.matchAll(/```(?:sh|bash)\n([\s\S]*?)```/g)) {
    for (const line of block[1]!.split("\n")) {
      const trimmed = line.trim();
      if (trimmed === "" || trimmed.startsWith("#")) continue;
      commands.push(trimmed.replace(/\s+#\s.*$/, "").trim());
    }
  }
  return commands;
}

function sh(command: string, env: Record<string, string>, timeoutMs = 30_000): { code: number | null; output: string } {
  const result = spawnSync("sh", ["-c", command], { cwd: repoRoot, env: { ...process.env, ...env }, encoding: "utf8", timeout: timeoutMs });
  return { code: result.status, output: `${result.stdout}${result.stderr}` };
}

describe("README commands", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;
  let env: Record<string, string>;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url, { TIMER_ADMIN_TOKEN: TOKEN, TIMER_POLLING_INTERVAL: "200" });
    env = { TIMER_BROKER_URL: nats.url, NATS_URL: nats.url, TIMER_ADMIN_TOKEN: TOKEN };
  });

  afterAll(async () => {
    await service?.dispose();
    await nats?.dispose();
  });

  const commands = readmeCommands();

  it("when the README is read, then it has commands to check", () => {
    expect(commands.length).toBeGreaterThan(20);
  });

  /** A command that runs until stopped (watch): started, it must stay up and print nothing on stderr. */
  async function checkKeepsRunning(command: string): Promise<void> {
    const child = spawn("sh", ["-c", `exec ${command}`], { cwd: repoRoot, env: { ...process.env, ...env } });
    let stderr = "";
    child.stdout.resume();
    const started = new Promise<void>((resolveStarted) =>
      child.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes("watching")) resolveStarted();
      }),
    );
    const exited = new Promise<void>((resolveExit) => child.once("exit", () => resolveExit()));
    await Promise.race([started, exited]);
    expect(child.exitCode, stderr).toBeNull();
    expect(stderr).toMatch(/^watching [^\n]*\(Ctrl-C to stop\)\n$/);
    child.kill("SIGTERM");
    await exited;
  }

  /** Runs `line` the way the README means it, against this test's broker and service. */
  async function check(line: string): Promise<void> {
    const local = (text: string) => text.replaceAll("localhost:8080", `127.0.0.1:${service.httpPort}`);
    if (line === "npm ci" || line === "npm test") {
      expect(CI_SCRIPT, `${line} is run by .ci/run`).toContain(line);
      return;
    }
    if (line === "npm start") return checkNpmStart(nats.url);
    if (line.startsWith("nats-server -js -sd ")) return checkNatsServer(line);
    if (line.startsWith("npm run ")) {
      const result = sh(`npm run -s ${line.slice("npm run ".length)}`, env, 60_000);
      expect(result.code, result.output).toBe(0);
      return;
    }
    if (line.startsWith("docker compose ")) {
      // No container engine here: test/ops/compose.test.ts validates the file with docker-compose config.
      expect(readFileSync(join(repoRoot, "test/ops/compose.test.ts"), "utf8")).toContain("config");
      return;
    }
    if (line.startsWith("export ")) {
      const [name, value] = line.slice("export ".length).split(/=(.*)/s) as [string, string];
      const base = { TIMER_DATABASE_URL: "postgres://timer:secret@db:5432/timer", TIMER_STORE: "postgres" };
      expect(() => loadConfig({ ...base, [name]: value }), line).not.toThrow();
      return;
    }
    if (line.startsWith("curl ")) {
      const result = sh(`${local(line)} --fail-with-body`, env);
      expect(result.code, result.output).toBe(0);
      return;
    }
    if (line.startsWith("nats req ")) {
      // The nats CLI is not installed here: the same request with the client.
      const [, subject, body] = line.match(/^nats req (\S+) '(.*)'$/) ?? [];
      const nc = await connect({ servers: nats.url });
      try {
        const reply = await nc.request(subject!, body!, { timeout: 5_000 });
        expect(reply.headers?.get("Nats-Service-Error-Code") ?? "", reply.string()).toBe("");
      } finally {
        await nc.close();
      }
      return;
    }
    if (line.startsWith("npx timer-client ")) {
      // The client package's command, through the stub npm links (as another project runs it).
      const command = `node clients/typescript/bin/timer-client.js ${line.slice("npx timer-client ".length)}`;
      if (line.startsWith("npx timer-client watch")) return checkKeepsRunning(command);
      const result = sh(command, env);
      expect(result.code, result.output).toBe(0);
      return;
    }
    if (line.startsWith("npx tsx examples/") || line === "node examples/quickstart.mjs") {
      // An example program: it talks to this test's broker and service and exits 0 when it worked.
      const result = sh(line, env, 60_000);
      expect(result.code, result.output).toBe(0);
      return;
    }
    if (line.startsWith("npx timer-service ")) {
      const args = line.slice("npx timer-service ".length);
      if (args === "serve" || args === "start") return checkServe(nats.url);
      const result = sh(`node dist/cli/main.js ${args}`, env);
      expect(result.code, result.output).toBe(0);
      return;
    }
    throw new Error(`the README command "${line}" is not checked: add it to test/ops/readme-commands.test.ts`);
  }

  for (const line of readmeCommands()) {
    it(`when the README says \`${line}\`, then it works`, async () => {
      await check(line);
    });
  }
});

/**
 * Starts the service with `command` under names of its own (a second instance on the same consumer
 * would wait for the lease), waits until it is ready, and stops it with SIGTERM.
 */
async function checkStarts(brokerUrl: string, name: string, command: readonly string[]): Promise<void> {
  const started = await TimerServiceProcess.start(
    brokerUrl,
    {
      TIMER_SUBJECT_PREFIX: name,
      TIMER_COMMANDS_STREAM: `${name.toUpperCase()}_COMMANDS`,
      TIMER_EVENTS_STREAM: `${name.toUpperCase()}_EVENTS`,
      TIMER_CONSUMER: name,
    },
    { command },
  );
  await started.kill("SIGTERM");
  await started.dispose();
}

/**
 * Runs the README's nats-server line with its store folder moved into a temporary one and on a free
 * port, and checks that JetStream keeps its store in that folder (not under /tmp, the default).
 */
async function checkNatsServer(line: string): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), "readme-nats-"));
  const args = line
    .replace(/ -sd \S+/, ` -sd ${folder}`)
    .split(" ")
    .slice(1);
  const child = spawn(process.env.NATS_SERVER_BIN ?? "nats-server", [...args, "-a", "127.0.0.1", "-p", String(await freePort())]);
  try {
    let output = "";
    await new Promise<void>((ready, failed) => {
      child.stderr.on("data", (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes("Server is ready")) ready();
      });
      child.once("exit", (code) => failed(new Error(`nats-server exited (${code}): ${output}`)));
    });
    expect(existsSync(join(folder, "jetstream")), output).toBe(true);
  } finally {
    child.kill("SIGTERM");
    rmSync(folder, { recursive: true, force: true });
  }
}

const checkNpmStart = (brokerUrl: string) => checkStarts(brokerUrl, "readme", ["npm", "start", "--silent"]);
const checkServe = (brokerUrl: string) => checkStarts(brokerUrl, "serve", [process.execPath, "dist/cli/main.js", "serve"]);
