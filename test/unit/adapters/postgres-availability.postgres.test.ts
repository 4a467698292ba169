import { connect, createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { DATABASE_UNREACHABLE_LOG_INTERVAL_MS, waitUntilPostgresAnswers } from "../../../src/adapters/postgres/postgres-availability.js";
import { DatabaseSetupError } from "../../../src/adapters/postgres/database-setup-error.js";
import { TEST_DATABASE_URL } from "../../support/test-postgres.js";
import { freePort } from "../../support/free-port.js";

interface Line {
  readonly level: string;
  readonly message: string | undefined;
  readonly atMs: number;
  readonly fields: Record<string, unknown>;
}

/** A logger that keeps its lines with the fake time they were written at. */
function recordingLogger(now: () => number): { lines: Line[]; logger: Parameters<typeof waitUntilPostgresAnswers>[0]["logger"] } {
  const lines: Line[] = [];
  const at = (level: string) => (fields: object, message?: string) =>
    lines.push({ level, message, atMs: now(), fields: fields as Record<string, unknown> });
  return { lines, logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") } };
}

function urlWith(change: { port?: number; database?: string }): string {
  const url = new URL(TEST_DATABASE_URL);
  if (change.port !== undefined) url.port = String(change.port);
  if (change.database !== undefined) url.pathname = `/${change.database}`;
  if (url.password === "") url.password = "hunter2";
  return url.toString();
}

describe("waitUntilPostgresAnswers", () => {
  let relay: Server | undefined;
  const sockets = new Set<Socket>();

  afterEach(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => (relay === undefined ? resolve() : relay.close(() => resolve())));
    relay = undefined;
  });

  /** Starts forwarding `port` to the test database. */
  async function openRelay(port: number): Promise<void> {
    const target = new URL(TEST_DATABASE_URL);
    relay = createServer((inbound) => {
      const outbound = connect(Number(target.port || 5432), target.hostname);
      for (const socket of [inbound, outbound]) {
        sockets.add(socket);
        socket.on("error", () => undefined);
      }
      inbound.pipe(outbound).pipe(inbound);
    });
    await new Promise<void>((resolve) => relay!.listen(port, "127.0.0.1", resolve));
  }

  it("when the port is closed for a while, then it retries, warns at most once per interval with the redacted URL, and resolves once the database answers", async () => {
    const port = await freePort();
    let nowMs = 0;
    let sleeps = 0;
    const { lines, logger } = recordingLogger(() => nowMs);

    await waitUntilPostgresAnswers({
      url: urlWith({ port }),
      timeoutMs: 2_000,
      logger,
      now: () => nowMs,
      sleep: async (ms) => {
        nowMs += ms;
        sleeps += 1;
        if (sleeps === 11) await openRelay(port);
      },
    });

    const warns = lines.filter((line) => line.level === "warn");
    expect(warns[0]).toMatchObject({ atMs: 0, fields: { attempts: 1, database: urlWith({ port }).replace("hunter2", "***") } });
    expect(warns.length).toBeGreaterThan(1);
    expect(warns.length).toBeLessThan(11);
    for (const [i, line] of warns.entries()) {
      if (i > 0) expect(line.atMs - warns[i - 1]!.atMs).toBeGreaterThanOrEqual(DATABASE_UNREACHABLE_LOG_INTERVAL_MS);
      expect(String(line.fields.error)).toContain("ECONNREFUSED");
    }
    expect(lines.at(-1)).toMatchObject({ level: "info", message: "Postgres database reached", fields: { attempts: 11 } });
    expect(JSON.stringify(lines)).not.toContain("hunter2");
  });

  it("when the database does not exist, then it throws a DatabaseSetupError naming the redacted URL and what to do, without retrying", async () => {
    const url = urlWith({ database: "timer_no_such_database" });
    const { lines, logger } = recordingLogger(() => 0);

    const error = await waitUntilPostgresAnswers({
      url,
      timeoutMs: 2_000,
      logger,
      sleep: () => Promise.reject(new Error("no retry expected")),
    }).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );

    expect(error).toBeInstanceOf(DatabaseSetupError);
    expect(error).toMatchObject({ code: "3D000" });
    expect((error as Error).message).toBe(
      `TIMER_DATABASE_URL ${url.replace("hunter2", "***")}: database "timer_no_such_database" does not exist; create the database, or fix the database name in the URL`,
    );
    expect(lines).toEqual([]);
  });
});
