import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isBeforeNats210 } from "../../src/adapters/nats/old-nats-server.js";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { freePort } from "../support/free-port.js";
import { waitFor } from "../support/wait-for.js";

/** The service says what is off at start (CONTRACT §17's spirit for operators): each text is asserted. */
const message = (line: Record<string, unknown>) => String(line.msg);

describe("start-up messages", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url);
  });

  afterAll(async () => {
    await service?.dispose();
    await nats?.dispose();
  });

  it("when the admin token is unset, then a start-up line and the 404 at / name TIMER_ADMIN_TOKEN", async () => {
    const line = service.logs().find((l) => message(l).startsWith("the admin page and the /v1 query API are disabled"));
    expect(line && message(line)).toContain("start the service with TIMER_ADMIN_TOKEN set");
    for (const path of ["/", "/v1/tenants"]) {
      const response = await fetch(`${service.baseUrl}${path}`);
      expect(response.status).toBe(404);
      expect(((await response.json()) as { hint: string }).hint).toContain("TIMER_ADMIN_TOKEN");
    }
    expect((await fetch(`${service.baseUrl}/nothing-here`)).status).toBe(404);
  });

  it("when the service is ready, then its line names the HTTP port and the database", async () => {
    const ready = await waitFor(() => service.logs().find((l) => message(l).startsWith("timer service started"))!, {
      timeoutMs: 10_000,
      what: "the ready line",
    });
    const port = new URL(service.baseUrl).port;
    expect(message(ready)).toMatch(
      new RegExp(
        `^timer service started: ready on HTTP port ${port}, sqlite database .*timer\\.db$|^timer service started: ready on HTTP port ${port}, postgres database schema `,
      ),
    );
    expect(ready).toMatchObject({ httpPort: Number(port) });
    expect(service.logs().some((l) => message(l).includes("older than 2.10"))).toBe(false);
  });
});

describe("isBeforeNats210", () => {
  it("when versions are compared, then 2.9 and older are old, 2.10 and later and unknown ones are not", () => {
    expect(["2.9.10", "v2.9.25", "1.4.0"].map(isBeforeNats210)).toEqual([true, true, true]);
    expect(["2.10.0", "2.11.3", "3.0.0", undefined, "dev"].map(isBeforeNats210)).toEqual([false, false, false, false, false]);
  });
});

/** Debian bookworm's nats-server 2.9, where the machine has it. */
const OLD_NATS = "/usr/sbin/nats-server";
const oldVersion = spawnSync(OLD_NATS, ["--version"], { encoding: "utf8" }).stdout?.match(/v(\d+\.\d+\.\d+)/)?.[1];

describe.skipIf(oldVersion === undefined || !isBeforeNats210(oldVersion))(`on nats-server ${oldVersion ?? "2.9 (not installed)"}`, () => {
  let server: ChildProcess;
  let dir: string;
  let service: TimerServiceProcess;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "nats-29-"));
    const port = await freePort();
    server = spawn(OLD_NATS, ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", dir], { stdio: "ignore" });
    service = await TimerServiceProcess.start(`nats://127.0.0.1:${port}`);
  });

  afterAll(async () => {
    await service?.dispose();
    server?.kill("SIGKILL");
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("when the service starts, then it warns what is lost: sync_interval durability and partitioned ingest", () => {
    const warning = service.logs().find((l) => message(l).includes("is older than 2.10"));
    expect(warning).toMatchObject({ level: "warn", serverVersion: oldVersion });
    expect(message(warning!)).toContain("no jetstream sync_interval");
    expect(message(warning!)).toContain("ingest is not partitioned (TIMER_COMMAND_PARTITIONS is ignored");
    expect(message(warning!)).toContain("upgrade nats-server to 2.10 or later");
  });
});
