import { randomBytes } from "node:crypto";
import { connect, createServer, type Server, type Socket } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TEST_DATABASE_URL, uniqueSchema } from "../support/test-postgres.js";
import { freePort } from "../support/free-port.js";
import { waitFor } from "../support/wait-for.js";

/** A password that must appear in no output: trust authentication (the test database's) ignores it. */
const PASSWORD = `never-logged-${randomBytes(4).toString("hex")}`;

/** TIMER_DATABASE_URL for the test database with another port, database or user, and a password. */
function databaseUrl(change: { port?: number; database?: string; user?: string }): string {
  const url = new URL(TEST_DATABASE_URL);
  if (change.port !== undefined) url.port = String(change.port);
  if (change.database !== undefined) url.pathname = `/${change.database}`;
  if (change.user !== undefined) url.username = change.user;
  if (url.password === "") url.password = PASSWORD;
  return url.toString();
}

/** A TCP relay listening on `port` to the test database: the database "comes up" on that port. */
async function relayToDatabase(port: number): Promise<{ close(): Promise<void> }> {
  const target = new URL(TEST_DATABASE_URL);
  const sockets = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    const outbound = connect(Number(target.port || 5432), target.hostname);
    for (const socket of [inbound, outbound]) {
      sockets.add(socket);
      socket.on("error", () => undefined).on("close", () => sockets.delete(socket));
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const message = (line: Record<string, unknown>) => String(line.msg);

describe("a Postgres database that is not there at start", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess | undefined;
  let relay: { close(): Promise<void> } | undefined;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
  });

  afterEach(async () => {
    await service?.dispose();
    service = undefined;
    await relay?.close();
    relay = undefined;
  });

  afterAll(async () => {
    await nats?.dispose();
  });

  function startService(url: string): Promise<TimerServiceProcess> {
    return TimerServiceProcess.start(
      nats.url,
      { TIMER_STORE: "postgres", TIMER_DATABASE_URL: url, TIMER_DATABASE_SCHEMA: uniqueSchema("pgstart") },
      { waitReady: false },
    );
  }

  it("when nothing listens on its port, then the service waits with /readyz 503 and a line naming the redacted URL, and is ready once it answers", async () => {
    const port = await freePort();
    const url = databaseUrl({ port });
    service = await startService(url);
    const running = service;

    const waiting = await waitFor(() => running.logs().find((line) => message(line).startsWith("Postgres database unreachable"))!, {
      timeoutMs: 20_000,
      what: "the unreachable line",
    });
    expect(waiting).toMatchObject({ level: "warn", database: url.replace(PASSWORD, "***"), attempts: 1 });
    expect(String(waiting.error)).toContain("ECONNREFUSED");
    const readyz = await fetch(`${running.baseUrl}/readyz`);
    expect(readyz.status).toBe(503);
    expect(((await readyz.json()) as { checks: Record<string, boolean> }).checks.storage).toBe(false);
    expect((await fetch(`${running.baseUrl}/healthz`)).status).toBe(200);

    relay = await relayToDatabase(port);
    await running.waitUntilReady(30_000);

    expect(running.logs().some((line) => message(line) === "Postgres database reached")).toBe(true);
    expect(running.logLines.join("\n") + running.stderr).not.toContain(PASSWORD);
  });

  it.each([
    ["database", { database: `timer_missing_${randomBytes(4).toString("hex")}` }, "3D000", "create the database"],
    ["role", { user: `timer_missing_${randomBytes(4).toString("hex")}` }, "28000", "create the role"],
  ])(
    "when the %s does not exist, then the service ends non-zero with one line that names TIMER_DATABASE_URL and what to do",
    async (_what, change, code, advice) => {
      const url = databaseUrl(change);
      service = await startService(url);

      const exit = await service.exited();

      expect(exit.code).not.toBe(0);
      expect(exit.code).not.toBe(null);
      const fatal = service.logs().filter((line) => line.level === "fatal");
      expect(fatal).toHaveLength(1);
      expect(fatal[0]).toMatchObject({ code });
      expect(message(fatal[0]!)).toContain(`TIMER_DATABASE_URL ${url.replace(PASSWORD, "***")}: `);
      expect(message(fatal[0]!)).toContain("does not exist");
      expect(message(fatal[0]!)).toContain(advice);
      expect(fatal[0]).not.toHaveProperty("err");
      expect(service.logLines.join("\n")).not.toMatch(/\n\s+at /);
      expect(service.stderr).toBe("");
      expect(service.logLines.join("\n")).not.toContain(PASSWORD);
    },
  );
});
