import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type Msg } from "@nats-io/transport-node";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";

// The examples/ folder as a new user runs it: `npm run example`, and the producer and consumer
// scripts with tsx, against a real nats-server and the built service (`npm run build` first).

const ROOT = resolve(import.meta.dirname, "../..");
const TSX = resolve(ROOT, "node_modules/.bin/tsx");

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function run(bin: string, args: readonly string[], env: Record<string, string>): Promise<Run> {
  return new Promise((done) => {
    const child = spawn(bin, args, { cwd: ROOT, env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.once("exit", (code) => done({ code, stdout, stderr }));
  });
}

/** The JSON objects among the printed lines (npm's own banner lines are not JSON). */
function jsonLines(text: string): Record<string, unknown>[] {
  return text.split("\n").flatMap((line) => {
    try {
      const value: unknown = JSON.parse(line.trim());
      return typeof value === "object" && value !== null ? [value as Record<string, unknown>] : [];
    } catch {
      return [];
    }
  });
}

/** A long-running example script whose output can be awaited line by line. */
class Running {
  private readonly child: ChildProcess;
  stdout = "";
  stderr = "";
  private readonly listeners: (() => void)[] = [];

  constructor(args: readonly string[], env: Record<string, string>) {
    this.child = spawn(TSX, args, { cwd: ROOT, env: { ...process.env, ...env } });
    this.child.stdout!.on("data", (c: Buffer) => ((this.stdout += c.toString()), this.listeners.forEach((l) => l())));
    this.child.stderr!.on("data", (c: Buffer) => ((this.stderr += c.toString()), this.listeners.forEach((l) => l())));
  }

  until(done: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
    return new Promise((resolveWait, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${what} within ${timeoutMs} ms; stdout: ${this.stdout} stderr: ${this.stderr}`)),
        timeoutMs,
      );
      const check = (): void => {
        if (done()) {
          clearTimeout(timer);
          resolveWait();
        }
      };
      this.listeners.push(check);
      check();
    });
  }

  async stop(): Promise<number | null> {
    if (this.child.exitCode !== null) return this.child.exitCode;
    const exit = new Promise<number | null>((r) => this.child.once("exit", (code) => r(code)));
    this.child.kill("SIGTERM");
    return exit;
  }
}

describe("examples", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;
  let env: Record<string, string>;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url, { TIMER_POLLING_INTERVAL: "200" });
    env = { TIMER_BROKER_URL: nats.url };
  });

  afterAll(async () => {
    await service?.dispose();
    await nats?.dispose();
  });

  it("when `npm run example` runs against a running service, then it prints the timer's DueTimeReached and exits 0", async () => {
    const result = await run("npm", ["run", "example"], env);

    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    expect(result.stdout).toMatch(/^scheduled order-\S+ for \S+ \(stream TIMER_COMMANDS, seq \d+\)$/m);
    const event = jsonLines(result.stdout).find((line) => line.type === "DueTimeReached");
    expect(event, result.stdout).toMatchObject({
      type: "DueTimeReached",
      tenantId: "acme",
      correlationId: "req-42",
      payload: { tenantId: "acme", data: { orderId: 4711 } },
    });
    const serviceCallId = (event!.payload as { serviceCallId: string }).serviceCallId;
    expect(result.stdout).toContain(`scheduled ${serviceCallId} for`);
    expect(result.stdout).toContain(`DueTimeReached acme/${serviceCallId}: due `);
  });

  it("when no service runs (no streams), then `npm run example` exits 1 saying so", async () => {
    const bare = await NatsServerProcess.start();
    try {
      const result = await run("npm", ["run", "example"], { TIMER_BROKER_URL: bare.url });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/is the service running\?/);
    } finally {
      await bare.dispose();
    }
  });

  it("when the tenant is invalid, then the client refuses the command before sending and `npm run example` exits 1 saying why", async () => {
    const result = await run("npm", ["run", "example"], { ...env, EXAMPLE_TENANT: "t".repeat(65) });
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(1);
    expect(result.stderr).toMatch(/tenantId "t+" is not valid: a tenant id is 1 to 64 letters, digits/);
    expect(result.stdout).not.toMatch(/^scheduled /m);
  });

  it("when the consumer runs and the producer schedules a timer, then the consumer prints its DueTimeReached in the producer's trace", async () => {
    const watcher = await connect({ servers: nats.url });
    const commands: Msg[] = [];
    const events: Msg[] = [];
    watcher.subscribe("timer.commands.schedule.shop", { callback: (_e, m) => void commands.push(m) });
    watcher.subscribe("timer.events.due.shop", { callback: (_e, m) => void events.push(m) });
    await watcher.flush();
    const consumer = new Running(["examples/consumer.ts", "--tenant", "shop"], env);
    try {
      await consumer.until(() => consumer.stderr.includes("reading timer.events.*.shop"), "the consumer did not start");
      const produced = await run(TSX, ["examples/producer.ts", "--tenant", "shop", "--id", "invoice-9", "--in-seconds", "1"], env);
      expect(produced.code, produced.stderr).toBe(0);
      const command = JSON.parse(produced.stdout) as { id: string };
      expect(command).toMatchObject({ type: "ScheduleTimer", tenantId: "shop", payload: { serviceCallId: "invoice-9" } });
      const traceparent = /^traceparent (\S+)$/m.exec(produced.stderr)?.[1];
      expect(traceparent, produced.stderr).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      await watcher.flush();
      expect(commands.find((m) => m.json<{ id: string }>().id === command.id)?.headers?.get("traceparent")).toBe(traceparent);

      await consumer.until(() => /^ {2}(trace|no traceparent)/m.test(consumer.stdout), "the consumer printed no DueTimeReached");
      expect(consumer.stdout).toContain("DueTimeReached shop/invoice-9: due ");
      expect(jsonLines(consumer.stdout)[0]).toMatchObject({ type: "DueTimeReached", payload: { serviceCallId: "invoice-9" } });
      // The consumer continues whatever trace the event carries: a child span of its traceparent.
      const event = events.find((m) => m.json<{ payload: { serviceCallId: string } }>().payload.serviceCallId === "invoice-9");
      const eventTraceparent = event?.headers?.get("traceparent") || undefined;
      if (eventTraceparent === undefined) {
        expect(consumer.stdout).toContain("no traceparent on the event");
      } else {
        const [, traceId, parentId] = eventTraceparent.split("-");
        expect(traceId, "the event continues the producer's trace").toBe(traceparent!.split("-")[1]);
        const child = new RegExp(`^ {2}trace ${traceId}: handled in span 00-${traceId}-([0-9a-f]{16})-01 \\(child of ${parentId}\\)$`, "m");
        expect(consumer.stdout).toMatch(child);
        expect(child.exec(consumer.stdout)![1]).not.toBe(parentId);
      }
    } finally {
      await watcher.close();
      expect(await consumer.stop()).toBe(0);
    }
  });

  it("when type-checked on their own, then the examples compile under the strict settings", async () => {
    const result = await run(resolve(ROOT, "node_modules/.bin/tsc"), ["-p", "examples/tsconfig.json"], {});
    expect(result.code, result.stdout).toBe(0);
  });

  it("when examples/ is copied out of the repository, then its package.json names the versions the repository uses", () => {
    const root = JSON.parse(readFileSync(resolve(ROOT, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    const examples = JSON.parse(readFileSync(resolve(ROOT, "examples/package.json"), "utf8")) as {
      type: string;
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    expect(examples.type).toBe("module");
    const { "@timer-service/client": client, ...published } = examples.dependencies;
    for (const [name, range] of Object.entries(published)) expect(range, name).toBe(root.dependencies[name]);
    // The client is this repository's own package (see examples/README.md for a copy elsewhere).
    expect(client).toBe("file:../clients/typescript");
    expect(examples.devDependencies.tsx).toBe(root.devDependencies.tsx);
  });
});
