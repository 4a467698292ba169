import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "node:net";
import { freePort } from "./free-port.js";

/**
 * A real `nats-server -js` for one test file: its own free port and its own store folder, so tests
 * can stop and restart it (fault tests) and never share state. Set NATS_SERVER_BIN to use another
 * binary than the one on PATH.
 */
export class NatsServerProcess {
  private child: ChildProcess | undefined;
  /** Whether the next (re)start enables JetStream; a test may turn it on for a restart. */
  jetstream = true;

  private constructor(
    readonly port: number,
    readonly storeDir: string,
    private readonly extraArgs: readonly string[],
  ) {}

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** Starts a server on a free port with a fresh store folder. `extraArgs` e.g. ["-c", "conf"]. */
  static async start(extraArgs: readonly string[] = [], options: { jetstream?: boolean } = {}): Promise<NatsServerProcess> {
    const server = new NatsServerProcess(
      await freePort(),
      mkdtempSync(join(tmpdir(), "timer-nats-")),
      extraArgs,
    );
    server.jetstream = options.jetstream ?? true;
    await server.restart();
    return server;
  }

  /** (Re)starts the server on the same port and store folder. */
  async restart(): Promise<void> {
    if (this.child !== undefined) throw new Error("nats-server is already running");
    const bin = process.env.NATS_SERVER_BIN ?? "nats-server";
    const child = spawn(bin, [...(this.jetstream ? ["-js"] : []), "-a", "127.0.0.1", "-p", String(this.port), "-sd", this.storeDir, ...this.extraArgs], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.length > 20_000) stderr = stderr.slice(-10_000);
    });
    this.child = child;
    const exited = new Promise<never>((_, reject) =>
      child.once("exit", (code) => reject(new Error(`nats-server exited with ${code}: ${stderr}`))),
    );
    exited.catch(() => undefined);
    await Promise.race([waitForPort(this.port, 10_000), exited]);
  }

  /** Stops the server (SIGKILL when `hard`), keeping its store folder for a restart. */
  async stop(hard = false): Promise<void> {
    const child = this.child;
    if (child === undefined) return;
    this.child = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill(hard ? "SIGKILL" : "SIGTERM");
    });
  }

  /** Stops the server and removes its store folder. */
  async dispose(): Promise<void> {
    await this.stop(true);
    rmSync(this.storeDir, { recursive: true, force: true });
  }
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nats-server did not listen on ${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
