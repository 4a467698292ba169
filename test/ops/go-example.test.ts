import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager, RetentionPolicy } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { repoRoot, requireBinary } from "./ops-support.js";

/**
 * The Go example (examples/go) built with the Debian toolchain in GOPATH mode, as its README says,
 * and run against a real broker and service: it must see its events and exit 0, and exit 1 with a
 * message saying what is missing when no service answers.
 */

const EXAMPLE_DIR = join(repoRoot, "examples/go");
/** Where Debian's golang-github-nats-io-go-nats-dev puts nats.go (and nuid, nkeys beside it). */
const DEBIAN_GOPATH = "/usr/share/gocode";
const INSTALL = "install Debian's golang-go and golang-github-nats-io-go-nats-dev (.ci/run does)";

interface ProgramResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a program to its end without blocking the event loop (the service's output keeps flowing). */
function runProgram(
  bin: string,
  args: readonly string[],
  options: { cwd?: string; env?: Record<string, string>; timeoutMs: number },
): Promise<ProgramResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function getTimer(nc: NatsConnection, tenant: string, serviceCallId: string): Promise<{ state: string } | null> {
  const reply = await nc.request(`timer.query.get.${tenant}`, JSON.stringify({ serviceCallId }), { timeout: 5_000 });
  return (reply.json() as { timer: { state: string } | null }).timer;
}

describe("Go example", () => {
  const workDir = mkdtempSync(join(tmpdir(), "go-example-"));
  const binary = join(workDir, "timer-go-example");
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;

  beforeAll(async () => {
    const go = requireBinary("go", INSTALL);
    if (!existsSync(join(DEBIAN_GOPATH, "src/github.com/nats-io/nats.go"))) {
      throw new Error(`nats.go is not under ${DEBIAN_GOPATH}; ${INSTALL}`);
    }
    const build = await runProgram(go, ["build", "-o", binary, "."], {
      cwd: EXAMPLE_DIR,
      env: { GO111MODULE: "off", GOPATH: `${DEBIAN_GOPATH}:${join(workDir, "gopath")}`, GOCACHE: join(workDir, "cache"), GOFLAGS: "" },
      timeoutMs: 50_000,
    });
    expect(build.code, `go build failed:\n${build.stdout}${build.stderr}`).toBe(0);
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url, { TIMER_POLLING_INTERVAL: "200" });
  });

  afterAll(async () => {
    await service?.dispose();
    await nats?.dispose();
    rmSync(workDir, { recursive: true, force: true });
  });

  it("when run against the service, then it sees its DueTimeReached and CommandRejected, queries both timers and exits 0", async () => {
    const tenant = `go-${process.pid}`;
    const result = await runProgram(binary, ["-tenant", tenant], { env: { NATS_URL: nats.url }, timeoutMs: 40_000 });
    const output = `${result.stdout}${result.stderr}`;
    expect(result.code, output).toBe(0);
    expect(result.stdout).toMatch(
      new RegExp(`^CommandRejected ${tenant}: INVALID_FIELD for command \\S+ \\(\\S+-invalid\\): payload\\.dueAt`, "m"),
    );
    const fired = new RegExp(`^DueTimeReached ${tenant}/(\\S+-fired): due `, "m").exec(result.stdout)?.[1];
    const cancelled = new RegExp(`^get ${tenant}/(\\S+-cancelled): Cancelled,`, "m").exec(result.stdout)?.[1];
    expect(fired, output).toBeDefined();
    expect(cancelled, output).toBeDefined();
    expect(result.stdout).toContain(`get ${tenant}/${fired}: Reached,`);

    // What it printed is what the service holds, and its consumer is gone.
    const nc = await connect({ servers: nats.url });
    try {
      expect((await getTimer(nc, tenant, fired!))?.state).toBe("Reached");
      expect((await getTimer(nc, tenant, cancelled!))?.state).toBe("Cancelled");
      const consumers: string[] = [];
      for await (const info of (await jetstreamManager(nc)).consumers.list("TIMER_EVENTS")) consumers.push(info.config.durable_name ?? "");
      expect(consumers).not.toContain(`timer-go-example-${tenant}`);
    } finally {
      await nc.close();
    }
  });

  it("when the streams exist but no service applies the commands, then it exits 1 saying which events never came", async () => {
    const bare = await NatsServerProcess.start();
    const nc = await connect({ servers: bare.url });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: "TIMER_COMMANDS", subjects: ["timer.commands.>"], retention: RetentionPolicy.Workqueue });
      await jsm.streams.add({ name: "TIMER_EVENTS", subjects: ["timer.events.>"] });
      const result = await runProgram(binary, ["-in", "1s", "-timeout", "3s"], { env: { NATS_URL: bare.url }, timeoutMs: 30_000 });
      expect(result.code, `${result.stdout}${result.stderr}`).toBe(1);
      expect(result.stdout).toMatch(/^sent ScheduleTimer /m);
      expect(result.stderr).toContain("timer-go-example: after 3s still waiting for the DueTimeReached and the CommandRejected");
    } finally {
      await nc.close();
      await bare.dispose();
    }
  });

  it("when no service ever started on the broker, then it exits 1 saying the stream is missing", async () => {
    const bare = await NatsServerProcess.start();
    try {
      const result = await runProgram(binary, [], { env: { NATS_URL: bare.url }, timeoutMs: 30_000 });
      expect(result.code, `${result.stdout}${result.stderr}`).toBe(1);
      expect(result.stderr).toContain("on the stream TIMER_EVENTS (the service creates the stream when it starts: is it running?)");
    } finally {
      await bare.dispose();
    }
  });
});
