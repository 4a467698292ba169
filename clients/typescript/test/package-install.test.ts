/**
 * The package as a user gets it: `npm pack` (its prepack build), installed from the tarball into
 * an empty project, used by a plain ESM script and type-checked by a TypeScript file.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../../../test/support/nats-server.js";

const PACKAGE_DIR = resolve(import.meta.dirname, "..");
const TSC = resolve(PACKAGE_DIR, "../../node_modules/typescript/bin/tsc");

const SCRIPT = `
import { connectTimerClient, TimerClientError } from "@timer-service/client";
const timers = await connectTimerClient({ servers: process.env.NATS_URL, tenantId: "acme" });
const { commandId } = await timers.schedule({ serviceCallId: "order-1", dueAt: new Date(Date.now() + 2000), data: { orderId: 1 } });
let refused;
try {
  await timers.schedule({ serviceCallId: "order-2", dueAt: "2026-01-01T00:00:00" });
} catch (error) {
  refused = error instanceof TimerClientError ? error.code : String(error);
}
await timers.close();
console.log(JSON.stringify({ commandId, refused }));
`;

const TYPED = `
import { connectTimerClient, type Timer, type TimerEvent, TimerClientError } from "@timer-service/client";
export async function use(): Promise<Timer | null> {
  const timers = await connectTimerClient({ servers: "nats://127.0.0.1:4222", tenantId: "acme", user: "u", pass: "p" });
  await timers.schedule({ serviceCallId: "x", dueAt: new Date(), repeat: { cron: "0 9 * * *", timezone: "Europe/Berlin" } });
  const sub = await timers.consume({ durable: "d", kinds: ["due"] }, async (event: TimerEvent) => {
    if (event.type === "DueTimeReached") console.log(event.payload.reachedAt, event.headers["traceparent"]);
  });
  await sub.stop();
  const code: string = new TimerClientError("TIMEOUT", "t").code;
  console.log(code);
  return timers.get("x");
}
`;

describe("npm pack of @timer-service/client", () => {
  let nats: NatsServerProcess;
  let work: string;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    const nc = await connect({ servers: nats.url });
    await (await jetstreamManager(nc)).streams.add({ name: "TIMER_COMMANDS", subjects: ["timer.commands.>"] });
    await nc.close();
    work = mkdtempSync(join(tmpdir(), "timer-client-pack-"));
  });

  afterAll(async () => {
    await nats?.dispose();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it("when the tarball is installed into an empty project, then a script schedules a timer and refuses bad input", () => {
    execFileSync("npm", ["pack", "--pack-destination", work], { cwd: PACKAGE_DIR, stdio: "pipe" });
    const tarball = readdirSync(work).find((f) => f.endsWith(".tgz"));
    expect(tarball).toBeDefined();
    const project = join(work, "app");
    execFileSync("mkdir", ["-p", project]);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
    const install = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", join(work, tarball!)], {
      cwd: project,
      encoding: "utf8",
    });
    expect(install.status, install.stderr).toBe(0);
    // Every dependency fits the Node versions the package claims (engines >= 20.19): no EBADENGINE.
    expect(install.stderr).not.toMatch(/EBADENGINE/);
    const engines = JSON.parse(execFileSync("npm", ["query", ".prod:attr(engines, [node])"], { cwd: project }).toString()) as {
      name: string;
      version: string;
      engines: { node: string };
    }[];
    const needsNewerNode = engines.filter(({ engines: { node } }) => Number(/\d+/.exec(node)?.[0] ?? 0) > 20);
    expect(needsNewerNode.map((p) => `${p.name}@${p.version} node ${p.engines.node}`)).toEqual([]);
    const installed = JSON.parse(execFileSync("npm", ["ls", "--all", "--json", "--omit=dev"], { cwd: project }).toString()) as {
      dependencies: Record<string, { dependencies?: Record<string, unknown> }>;
    };
    expect(Object.keys(installed.dependencies["@timer-service/client"]!.dependencies ?? {}).every((d) => d.startsWith("@nats-io/"))).toBe(
      true,
    );

    writeFileSync(join(project, "run.mjs"), SCRIPT);
    const output = execFileSync(process.execPath, ["run.mjs"], { cwd: project, env: { ...process.env, NATS_URL: nats.url } }).toString();
    const result = JSON.parse(output.trim().split("\n").at(-1)!) as { commandId: string; refused: string };
    expect(result.commandId).toMatch(/^[0-9a-f]{32}$/);
    expect(result.refused).toBe("INVALID_INPUT");

    // The command the package puts on PATH, as another project runs it.
    const cli = spawnSync("npx", ["timer-client", "schedule", "--tenant", "acme", "--id", "x", "--at", "2026-13-01T00:00:00Z"], {
      cwd: project,
      encoding: "utf8",
      env: { ...process.env, NATS_URL: nats.url },
    });
    expect(cli.status, cli.stderr).toBe(2);
    expect(cli.stderr).toContain('--at "2026-13-01T00:00:00Z" is not a date-time: there is no month 13');

    writeFileSync(join(project, "typed.ts"), TYPED);
    const args = [
      "--noEmit",
      "--strict",
      "--module",
      "nodenext",
      "--moduleResolution",
      "nodenext",
      "--target",
      "es2022",
      "--lib",
      "es2022,dom",
      "--skipLibCheck",
      "typed.ts",
    ];
    try {
      execFileSync(process.execPath, [TSC, ...args], { cwd: project, stdio: "pipe" });
    } catch (error) {
      throw new Error(`the declarations do not type-check in a user's project:\n${String((error as { stdout?: Buffer }).stdout)}`, {
        cause: error,
      });
    }
  }, 240_000);
});
