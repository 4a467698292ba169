import { spawn, type ChildProcess } from "node:child_process";
import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient } from "../support/timer-client.js";
import { EventStreamReader } from "../support/event-stream-reader.js";
import { TENANT, commandBacklog, earlyEvents, planTimers, scheduleAll } from "./fault-support.js";
import { waitUntil } from "../support/wait-for.js";

/**
 * CONTRACT §16 on SQLite: another process holds the database's write lock (an open exclusive
 * transaction). Even while nothing is written, /readyz is 503 with `storage: false` within
 * 2 × TIMER_DATABASE_TIMEOUT_MS, /healthz keeps answering at once (the busy wait is bounded),
 * commands sent meanwhile are redelivered, and once the lock is gone the service is ready within
 * 10 s and fires every timer.
 */

const TIMEOUT_MS = 1_000;
const LOCK_MS = 5_000;
const REPO_ROOT = resolve(import.meta.dirname, "../..");

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await Promise.resolve(cleanup()).catch((error: unknown) => console.error(error));
});

/** A child process that opens `dbPath`, begins an exclusive transaction and holds it until killed. */
async function holdExclusiveLock(dbPath: string): Promise<ChildProcess> {
  const script = `const D = require("better-sqlite3"); const db = new D(process.argv[1]); db.pragma("busy_timeout = 5000");
    db.exec("BEGIN EXCLUSIVE"); console.log("locked"); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ["-e", script, dbPath], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolveLocked, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => chunk.toString().includes("locked") && resolveLocked());
    child.once("exit", (code) => reject(new Error(`lock holder exited with ${code}`)));
  });
  return child;
}

async function probe(service: TimerServiceProcess, path: string): Promise<{ status: number; storage: unknown; ms: number }> {
  const startedAtMs = Date.now();
  try {
    const response = await fetch(`${service.baseUrl}${path}`, { signal: AbortSignal.timeout(2_000) });
    const body = (await response.json()) as { checks?: { storage?: unknown } };
    return { status: response.status, storage: body.checks?.storage, ms: Date.now() - startedAtMs };
  } catch {
    return { status: 0, storage: undefined, ms: Date.now() - startedAtMs };
  }
}

describe("SQLite locked by another process", () => {
  it("when another process holds the write lock while nothing is written, then /readyz is 503 with storage false within 2 × the time-out, and after the lock is released the service is ready within 10 s and fires every timer", async () => {
    const nats = await NatsServerProcess.start();
    cleanups.push(() => nats.dispose());
    const service = await TimerServiceProcess.start(nats.url, {
      TIMER_STORE: "sqlite",
      TIMER_DATABASE_TIMEOUT_MS: String(TIMEOUT_MS),
      TIMER_POLLING_INTERVAL: "500",
    });
    cleanups.push(() => service.dispose());
    const client = await TimerClient.connect(nats.url);
    cleanups.push(() => client.close());
    const reader = await EventStreamReader.start(nats.url);
    cleanups.push(() => reader.close());

    const baseMs = Date.now();
    const before = planTimers("locked-before", 20, baseMs, LOCK_MS + 2_000, LOCK_MS + 4_000);
    await scheduleAll(client, before);
    await waitUntil(
      async () => {
        const backlog = await commandBacklog(client);
        return backlog.pending + backlog.ackPending === 0;
      },
      15_000,
      "commands stored",
    );

    const holder = await holdExclusiveLock(service.env.TIMER_DB_PATH!);
    cleanups.push(() => void holder.kill("SIGKILL"));
    const lockedAtMs = Date.now();
    let notReadyMs: number | undefined;
    const healthzMs: number[] = [];
    while (Date.now() - lockedAtMs < LOCK_MS) {
      const ready = await probe(service, "/readyz");
      if (notReadyMs === undefined && ready.status === 503 && ready.storage === false) notReadyMs = Date.now() - lockedAtMs;
      healthzMs.push((await probe(service, "/healthz")).ms);
      await new Promise((r) => setTimeout(r, 50));
    }
    // Sent while locked: nak-and-redeliver until the lock is gone.
    const during = planTimers("locked-during", 10, Date.now(), 0, 2_000);
    await scheduleAll(client, during);
    expect((await probe(service, "/readyz")).status).toBe(503);

    const releasedAtMs = Date.now();
    holder.kill("SIGKILL");
    let readyAgainMs: number | undefined;
    while (readyAgainMs === undefined && Date.now() - releasedAtMs < 15_000) {
      if ((await probe(service, "/readyz")).status === 200) readyAgainMs = Date.now() - releasedAtMs;
      else await new Promise((r) => setTimeout(r, 50));
    }
    const all = [...before, ...during];
    await reader.waitForTimers(
      TENANT,
      all.map((t) => t.serviceCallId),
      20_000,
    );
    console.info(
      `SQLite locked ${LOCK_MS} ms by another process, TIMER_DATABASE_TIMEOUT_MS=${TIMEOUT_MS}: /readyz 503 after ${notReadyMs} ms, ready ${readyAgainMs} ms after the release; /healthz max ${Math.max(...healthzMs)} ms over ${healthzMs.length} probes; ${all.length} timers fired`,
    );
    expect(notReadyMs).toBeDefined();
    expect(notReadyMs!).toBeLessThanOrEqual(2 * TIMEOUT_MS);
    expect(readyAgainMs).toBeDefined();
    expect(readyAgainMs!).toBeLessThanOrEqual(10_000);
    expect(Math.max(...healthzMs)).toBeLessThan(1_000);
    expect(earlyEvents(reader.events)).toEqual([]);
    expect(service.logLines.some((line) => line.includes("storage not writable"))).toBe(true);
  }, 90_000);
});
