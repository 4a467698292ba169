import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { freePort } from "../support/free-port.js";
import { repoRoot } from "./ops-support.js";

/**
 * The broker configurations we ship (deploy/nats/*.conf; the compose one with `sync_interval:
 * always`) start on the nats-server the tests run on (NATS_SERVER_BIN, else PATH; CI installs
 * 2.10 from Debian trixie, .ci/run) and serve JetStream: a stream is created and a publish acked.
 * `sync_interval` needs 2.10: on an older binary that case is skipped, except in CI where it fails.
 */

const BIN = process.env.NATS_SERVER_BIN ?? "nats-server";
const VERSION = /v(\d+)\.(\d+)\.(\d+)/.exec(execFileSync(BIN, ["--version"], { encoding: "utf8" }));
const AT_LEAST_2_10 = VERSION !== null && (Number(VERSION[1]) > 2 || (Number(VERSION[1]) === 2 && Number(VERSION[2]) >= 10));
const PASSWORDS = {
  TIMER_SERVICE_NATS_PASSWORD: "service-pw-0123456789",
  TIMER_CLIENT_NATS_PASSWORD: "client-pw-0123456789",
  ACME_NATS_PASSWORD: "acme-pw-0123456789",
  GLOBEX_NATS_PASSWORD: "globex-pw-0123456789",
};

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

async function startServer(args: readonly string[]): Promise<{ child: ChildProcess; stderr: () => string }> {
  let stderr = "";
  const child = spawn(BIN, args, { env: { ...process.env, ...PASSWORDS }, stdio: ["ignore", "pipe", "pipe"] });
  cleanups.push(() => child.kill("SIGKILL"));
  child.stdout!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const deadline = Date.now() + 15_000;
  while (!stderr.includes("Server is ready")) {
    if (child.exitCode !== null) throw new Error(`nats-server ${args.join(" ")} exited ${child.exitCode}:\n${stderr}`);
    if (Date.now() > deadline) throw new Error(`nats-server not ready within 15 s:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, stderr: () => stderr };
}

/** Connects as timer-service (or without a login), creates a stream on timer.events.> and awaits a publish ack. */
async function servesJetStream(port: number, login: { user?: string; pass?: string }): Promise<void> {
  const nc = await connect({ servers: `nats://127.0.0.1:${port}`, ...login });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "TIMER_EVENTS", subjects: ["timer.events.>"] });
    const ack = await jetstream(nc).publish("timer.events.due.acme", "{}", { msgID: "acme:x:1:1" });
    expect(ack.seq).toBe(1);
    expect((await jsm.streams.info("TIMER_EVENTS")).state.messages).toBe(1);
  } finally {
    await nc.close();
  }
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "timer-nats-conf-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe(`shipped NATS configurations on ${BIN} ${VERSION?.[0] ?? "(unknown version)"}`, () => {
  it.skipIf(!AT_LEAST_2_10 && process.env.CI !== "true")(
    "when the compose stack's deploy/nats/nats-server.conf starts (its store and ports moved to temporary ones), then it serves JetStream, fsyncs always and reports healthy",
    async () => {
      const dir = tempDir();
      const [port, httpPort] = [await freePort(), await freePort()];
      const shipped = readFileSync(join(repoRoot, "deploy/nats/nats-server.conf"), "utf8");
      expect(shipped).toMatch(/^\s*sync_interval: always$/m);
      const conf = shipped
        .replace(/^port: 4222$/m, `port: ${port}\nhost: 127.0.0.1`)
        .replace(/^http_port: 8222$/m, `http: "127.0.0.1:${httpPort}"`)
        .replace(/store_dir: \/data/, `store_dir: "${join(dir, "store")}"`);
      expect(conf).not.toContain("/data\n");
      const path = join(dir, "nats-server.conf");
      writeFileSync(path, conf);

      const server = await startServer(["-c", path]);
      await servesJetStream(port, {});
      const health = await fetch(`http://127.0.0.1:${httpPort}/healthz?js-enabled-only=true`);
      expect(health.status).toBe(200);
      const varz = (await (await fetch(`http://127.0.0.1:${httpPort}/varz`)).json()) as {
        jetstream?: { config?: Record<string, unknown> };
      };
      expect(varz.jetstream?.config?.sync_always).toBe(true);
      expect(server.stderr()).not.toMatch(/\[ERR\]|\[FTL\]/);
    },
  );

  it.each(["single-account.conf", "tenant-accounts.conf"])(
    "when deploy/nats/%s starts as documented (-js -sd <dir> -c <file>), then timer-service logs in and JetStream serves it",
    async (file) => {
      const dir = tempDir();
      const port = await freePort();
      const server = await startServer([
        "-js",
        "-sd",
        dir,
        "-a",
        "127.0.0.1",
        "-p",
        String(port),
        "-c",
        join(repoRoot, "deploy/nats", file),
      ]);
      await servesJetStream(port, { user: "timer-service", pass: PASSWORDS.TIMER_SERVICE_NATS_PASSWORD });
      expect(server.stderr()).not.toMatch(/\[FTL\]/);
    },
  );
});
