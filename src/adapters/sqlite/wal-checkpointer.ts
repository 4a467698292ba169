import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

const WORKER_FILE = fileURLToPath(new URL("./wal-checkpoint.worker.js", import.meta.url));

/**
 * Checkpoints the WAL of the database at `path` from a worker thread every `intervalMs`. Returns
 * undefined where the compiled worker is missing (tests running from TypeScript sources), in which
 * case SQLite's own auto-checkpoint does the work on the writer's thread.
 */
export class WalCheckpointer {
  private constructor(private readonly worker: Worker) {}

  static start(path: string, intervalMs: number, onError: (message: string) => void): WalCheckpointer | undefined {
    if (!existsSync(WORKER_FILE)) return undefined;
    const worker = new Worker(WORKER_FILE, { workerData: { path, intervalMs } });
    worker.on("message", (message: { error?: string }) => {
      if (message.error !== undefined) onError(message.error);
    });
    worker.on("error", (error) => onError(String(error)));
    worker.unref();
    return new WalCheckpointer(worker);
  }

  async stop(): Promise<void> {
    const exited = new Promise<void>((resolve) => this.worker.once("exit", () => resolve()));
    this.worker.postMessage("close");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 1_000))]);
    await this.worker.terminate();
  }
}
