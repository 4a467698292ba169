import type { Worker } from "node:worker_threads";
import { startModuleWorker } from "../module-worker.js";
import type { SqliteConnectionOptions } from "./sqlite-connection.js";
import type { SqliteWriter } from "./sqlite-writer.js";
import { performWriterCall, type WriterAnswers, type WriterCall, type WriterReply, type WriterRequest } from "./sqlite-writer-protocol.js";

const WORKER = new URL("./sqlite-writer.worker.js", import.meta.url);

const CLOSED = () => new Error("the SQLite writer thread is closed");

/** How long close() waits for the writes sent before it. */
const CLOSE_TIMEOUT_MS = 10_000;

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
}

/** An error of the writer thread, with the SQLite code it had there. */
function writerError(error: NonNullable<WriterReply["error"]>): Error {
  return Object.assign(new Error(error.message), error.code === undefined ? {} : { code: error.code }, { name: error.name ?? "Error" });
}

/**
 * The main thread's handle on the writer thread (sqlite-writer.worker.ts): each write
 * (sqlite-writer-protocol.ts) is a message, answered once the thread has done it (after its
 * commit). The thread keeps the process alive only while an answer is awaited.
 */
export class SqliteWriterThread {
  #nextId = 1;
  readonly #pending = new Map<number, Pending>();
  #failure: Error | undefined;
  #closing = false;

  private constructor(private readonly worker: Worker) {
    worker.on("message", (reply: WriterReply) => this.#answer(reply));
    worker.on("error", (error) => this.#fail(error));
    // After close the thread ends by itself, and its exit may be seen before close() resumes.
    worker.on("exit", (code) => this.#fail(this.#closing ? CLOSED() : new Error(`the SQLite writer thread exited (code ${code})`)));
    worker.unref();
  }

  /** Starts the thread on the (migrated) database at `path`; resolves once its connection is open. */
  static async start(path: string, connection: SqliteConnectionOptions): Promise<SqliteWriterThread> {
    const worker = startModuleWorker(WORKER, { path, ...connection });
    await new Promise<void>((resolve, reject) => {
      const onExit = (code: number) => reject(new Error(`the SQLite writer thread exited (code ${code}) before it opened ${path}`));
      worker.once("error", reject);
      worker.once("exit", onExit);
      worker.once("message", () => {
        worker.off("error", reject);
        worker.off("exit", onExit);
        resolve();
      });
    });
    return new SqliteWriterThread(worker);
  }

  /** Why the thread is gone, once it is. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  submit<C extends WriterCall>(call: C): Promise<WriterAnswers[C["op"]]> {
    const id = this.#nextId++;
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const request: WriterRequest = { ...call, id };
    try {
      // Throws (DataCloneError) before anything is sent when an argument cannot be copied.
      this.worker.postMessage(request);
    } catch (error) {
      return Promise.reject(error);
    }
    const promise = new Promise<unknown>((resolve, reject) => this.#pending.set(id, { resolve, reject }));
    if (this.#pending.size === 1) this.worker.ref();
    return promise as Promise<WriterAnswers[C["op"]]>;
  }

  /**
   * Closes the connection after every request sent before, then ends the thread; after
   * CLOSE_TIMEOUT_MS (a write stuck in the kernel) it ends the thread without waiting.
   */
  async close(): Promise<void> {
    if (this.#failure === undefined) {
      this.#closing = true;
      const closed = this.submit({ op: "close" }).catch(() => undefined);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([closed, new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS)))]);
      clearTimeout(timer);
    }
    this.#fail(CLOSED());
    await this.worker.terminate();
  }

  #answer(reply: WriterReply): void {
    const pending = this.#pending.get(reply.id);
    if (pending === undefined) return;
    this.#pending.delete(reply.id);
    if (this.#pending.size === 0) this.worker.unref();
    if (reply.error === undefined) pending.resolve(reply.result);
    else pending.reject(writerError(reply.error));
  }

  #fail(error: Error): void {
    this.#failure ??= error;
    for (const pending of this.#pending.values()) pending.reject(this.#failure);
    this.#pending.clear();
  }
}

/** What the store needs of its writer: SqliteWriterThread, or InlineSqliteWriter in tests. */
export type SqliteWriterHandle = Pick<SqliteWriterThread, "submit" | "failure" | "close">;

/**
 * The same SqliteWriter behind the same calls, on the calling thread: for tests that reopen a
 * store thousands of times (the model tests), where a thread costs up to a second to start under
 * tsx. Calls run one at a time in call order, each after the caller's turn, their arguments and
 * answers copied as postMessage copies them; the algorithm is the writer thread's.
 */
export class InlineSqliteWriter implements SqliteWriterHandle {
  #queue: Promise<unknown> = Promise.resolve();
  #failure: Error | undefined;

  constructor(private readonly writer: SqliteWriter) {}

  get failure(): Error | undefined {
    return this.#failure;
  }

  submit<C extends WriterCall>(call: C): Promise<WriterAnswers[C["op"]]> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    let copied: C;
    try {
      copied = structuredClone(call);
    } catch (error) {
      return Promise.reject(error);
    }
    const answer = this.#queue.then(() => structuredClone(performWriterCall(this.writer, copied)));
    this.#queue = answer.catch(() => undefined);
    return answer;
  }

  async close(): Promise<void> {
    if (this.#failure !== undefined) return;
    await this.submit({ op: "close" }).catch(() => undefined);
    this.#failure = new Error("the SQLite writer is closed");
  }
}
