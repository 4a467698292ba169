import { afterEach, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { until } from "./tenant-stack.js";

// Every way the service can fail around its broker login, with the login in TIMER_BROKER_URL:
// whatever happens, no byte of the secret may reach stdout or stderr. Each case also checks the
// outcome itself (exit code, readiness, the warn line), so a silent process cannot pass.

const PASSWORD = "pw-9c41e7d2b0";
const TOKEN = "tk-51af08e3c6";
/** The service's own output (pino JSON and stderr), at the most verbose level. */
const VERBOSE = { TIMER_LOG_LEVEL: "trace" };

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function service(url: string, env: Record<string, string> = {}): Promise<TimerServiceProcess> {
  const started = await TimerServiceProcess.start(url, { ...VERBOSE, ...env }, { waitReady: false });
  cleanups.push(() => started.dispose());
  return started;
}

async function natsServer(args: string[]): Promise<NatsServerProcess> {
  const server = await NatsServerProcess.start(args);
  cleanups.push(() => server.dispose());
  return server;
}

function output(process: TimerServiceProcess): string {
  return `${process.logLines.join("\n")}\n${process.stderr}`;
}

function expectNoSecret(process: TimerServiceProcess): void {
  const text = output(process);
  for (const secret of [PASSWORD, TOKEN, encodeURIComponent(PASSWORD), PASSWORD.slice(3), TOKEN.slice(3)]) {
    expect(text, "a secret reached the output").not.toContain(secret);
  }
}

function hasLine(process: TimerServiceProcess, message: string): boolean {
  return process.logs().some((line) => line.msg === message);
}

describe("configuration errors", () => {
  it.each([
    ["a bad port", `nats://svc:${PASSWORD}@127.0.0.1:99999`],
    ["an http scheme", `http://svc:${PASSWORD}@127.0.0.1:4222`],
    ["a comma in the password", `nats://svc:${PASSWORD.slice(0, 5)},${PASSWORD.slice(5)}@127.0.0.1:4222`],
    ["a token and a bad host", `nats://${TOKEN}@bad host:4222`],
  ])(
    "when TIMER_BROKER_URL with a secret has %s, then the service exits 2 naming the variable and prints no part of the secret",
    async (_name, url) => {
      const running = await service(url);

      expect((await running.exited()).code).toBe(2);
      expect(running.stderr).toContain("TIMER_BROKER_URL");
      expectNoSecret(running);
    },
  );

  it("when TIMER_BROKER_URL carries a login and TIMER_NATS_TOKEN is set too, then the service exits 2 naming TIMER_NATS_TOKEN and prints neither secret", async () => {
    const running = await service(`nats://svc:${PASSWORD}@127.0.0.1:4222`, { TIMER_NATS_TOKEN: TOKEN });

    expect((await running.exited()).code).toBe(2);
    expect(running.stderr).toMatch(/TIMER_NATS_TOKEN: use one way to log in/);
    expectNoSecret(running);
  });
});

describe("logins in TIMER_BROKER_URL against a real nats-server", () => {
  it("when the URL carries user:password and the broker comes up late, then the service warns while it waits (redacted URL, attempts), becomes ready, and survives a broker restart — never printing the password", async () => {
    const server = await natsServer(["--user", "svc", "--pass", PASSWORD]);
    await server.stop(); // keeps its port: the service starts against a broker that is not there
    const running = await service(`nats://svc:${PASSWORD}@127.0.0.1:${server.port}`);

    await until("the 'unreachable' warn line", async () => hasLine(running, "NATS broker unreachable; still trying"));
    const warn = running.logs().find((line) => line.msg === "NATS broker unreachable; still trying")!;
    expect(warn).toMatchObject({ level: "warn", servers: [`nats://127.0.0.1:${server.port}`], attempts: 1 });

    await server.restart();
    await running.waitUntilReady();

    await server.stop();
    await until("the disconnect line", async () => hasLine(running, "disconnected from NATS; reconnecting"));
    await server.restart();
    await until("the reconnect line", async () => hasLine(running, "reconnected to NATS"));
    await running.waitUntilReady();
    expect(running.logs().find((line) => line.msg === "reconnected to NATS")?.attempts).toBeGreaterThanOrEqual(1);
    expectNoSecret(running);
  });

  it("when the URL carries a token, then the service logs in with it and becomes ready", async () => {
    const server = await natsServer(["--auth", TOKEN]);
    const running = await service(`nats://${TOKEN}@127.0.0.1:${server.port}`);

    await running.waitUntilReady();
    expectNoSecret(running);
  });

  it("when the URL's password is wrong, then the service exits 1 with the server's refusal and prints neither password", async () => {
    const server = await natsServer(["--user", "svc", "--pass", "the-right-one"]);
    const running = await service(`nats://svc:${PASSWORD}@127.0.0.1:${server.port}`);

    expect((await running.exited()).code).toBe(1);
    expect(output(running)).toMatch(/authorization violation/i);
    expectNoSecret(running);
    expect(output(running)).not.toContain("the-right-one");
  });
});
