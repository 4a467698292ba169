/**
 * The bench's handle on bullmq-worker.ts, a separate process: start it, wait until N jobs have
 * fired (with a deadline), collect the fire times, stop it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { REPO_ROOT, type BenchContext } from "../harness.js";

const WORKER_ENTRY = new URL("./bullmq-worker.ts", import.meta.url).pathname;

type WorkerMessage = { type: "ready" } | { type: "progress"; count: number } | { type: "fired"; indexes: number[]; times: number[] };

export class BullmqWorkerProcess {
  private fired = 0;
  private waiters: (() => void)[] = [];
  private collected: ((fired: { indexes: number[]; times: number[] }) => void) | undefined;
  private readonly exited: Promise<void>;

  private constructor(private readonly child: ChildProcess) {
    this.exited = new Promise((resolve) => child.once("exit", () => resolve()));
    child.on("message", (message: WorkerMessage) => {
      if (message.type === "progress") {
        this.fired = message.count;
        for (const wake of this.waiters.splice(0)) wake();
      } else if (message.type === "fired") {
        this.collected?.(message);
      }
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  static async start(ctx: BenchContext, redisPort: number, queue: string, concurrency: number): Promise<BullmqWorkerProcess> {
    const child = spawn(process.execPath, ["--import", "tsx", WORKER_ENTRY], {
      cwd: REPO_ROOT,
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      env: { ...process.env, BENCH_REDIS_PORT: String(redisPort), BENCH_QUEUE: queue, BENCH_CONCURRENCY: String(concurrency) },
    });
    const worker = new BullmqWorkerProcess(child);
    ctx.scope.defer(() => worker.stop());
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("bullmq worker not ready within 60 s")), 60_000);
      child.on("message", (message: WorkerMessage) => {
        if (message.type !== "ready") return;
        clearTimeout(timer);
        resolve();
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`bullmq worker exited with ${code} before it was ready`));
      });
    });
    return worker;
  }

  /** Jobs fired so far (as last reported; reports come every 20 ms). */
  get firedCount(): number {
    return this.fired;
  }

  async waitFor(count: number, timeoutMs: number, what: string): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (this.fired < count) {
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`${what}: ${this.fired} of ${count} jobs fired within ${Math.round(timeoutMs / 1000)} s`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 1_000));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The (job index, fire wall time) pairs recorded since the last collect. */
  collect(): Promise<{ indexes: number[]; times: number[] }> {
    return new Promise((resolve) => {
      this.collected = resolve;
      this.child.send({ type: "collect" });
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.send({ type: "stop" });
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}
