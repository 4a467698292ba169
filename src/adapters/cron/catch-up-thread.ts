import type { Worker } from "node:worker_threads";
import type { CatchUpCalculator } from "../../app/firing/catch-up-calculator.js";
import type { FiringDecision, FiringTimer } from "../../domain/firing-rules.js";
import { startModuleWorker } from "../module-worker.js";
import type { CatchUpReply, CatchUpRequest } from "./catch-up-protocol.js";

const WORKER = new URL("./catch-up.worker.js", import.meta.url);
/** Far above any bounded catch-up (tens of milliseconds); a rule that hangs the calendar costs one restart. */
const DEFAULT_TIMEOUT_MS = 10_000;

interface Job {
  readonly request: Omit<CatchUpRequest, "id">;
  readonly resolve: (decision: FiringDecision) => void;
  readonly reject: (error: Error) => void;
}

/**
 * Long catch-ups on a thread of their own (CatchUpCalculator). Requests are answered one at a time
 * in the order they came, so tenants that each wait for one catch-up take turns; a request that
 * takes longer than the time-out fails, and the thread is started anew for the next one. The
 * thread is started on the first request and keeps the process alive only while it works.
 */
export class CatchUpThread implements CatchUpCalculator {
  readonly #queue: Job[] = [];
  #worker: Worker | undefined;
  #current: { readonly id: number; readonly job: Job; readonly timeout: NodeJS.Timeout } | undefined;
  #nextId = 1;
  #closed = false;

  constructor(private readonly timeoutMs = DEFAULT_TIMEOUT_MS) {}

  decide(timer: FiringTimer, nowMs: number, prefixCancelTs: number | null): Promise<FiringDecision> {
    if (this.#closed) return Promise.reject(new Error("the catch-up thread is closed"));
    return new Promise((resolve, reject) => {
      this.#queue.push({ request: { timer: firingFields(timer), nowMs, prefixCancelTs }, resolve, reject });
      this.#next();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    const error = new Error("the catch-up thread is closed");
    for (const job of this.#queue.splice(0)) job.reject(error);
    this.#stopWorker(error);
  }

  #next(): void {
    if (this.#current !== undefined) return;
    const job = this.#queue.shift();
    if (job === undefined) {
      this.#worker?.unref();
      return;
    }
    const worker = (this.#worker ??= this.#startWorker());
    worker.ref();
    const id = this.#nextId++;
    const timeout = setTimeout(
      () => this.#stopWorker(new Error(`a catch-up took longer than ${this.timeoutMs} ms; its thread is started anew`)),
      this.timeoutMs,
    );
    this.#current = { id, job, timeout };
    worker.postMessage({ id, ...job.request } satisfies CatchUpRequest);
  }

  #startWorker(): Worker {
    const worker = startModuleWorker(WORKER);
    worker.on("message", (reply: CatchUpReply) => {
      const current = this.#current;
      if (current === undefined || current.id !== reply.id) return;
      this.#finish(reply.decision === undefined ? new Error(`catch-up failed: ${reply.error}`) : reply.decision);
    });
    worker.on("error", (error) => {
      if (this.#worker === worker) this.#stopWorker(error);
    });
    worker.on("exit", (code) => {
      if (this.#worker === worker) this.#stopWorker(new Error(`the catch-up thread exited (code ${code})`));
    });
    return worker;
  }

  #finish(outcome: FiringDecision | Error): void {
    const current = this.#current!;
    clearTimeout(current.timeout);
    this.#current = undefined;
    if (outcome instanceof Error) current.job.reject(outcome);
    else current.job.resolve(outcome);
    if (!this.#closed) this.#next();
  }

  /** Ends the thread and fails the request in hand; the next request starts a new thread. */
  #stopWorker(error: Error): void {
    const worker = this.#worker;
    this.#worker = undefined;
    if (worker !== undefined) void worker.terminate();
    if (this.#current !== undefined) this.#finish(error);
  }
}

/** Only what the firing rule reads: the event's content stays on the main thread. */
function firingFields(timer: FiringTimer): FiringTimer {
  const { tenantId, serviceCallId, dueAtMs, generation, occurrence, repeat, maxLatenessMs, commandTs, reachedAtMs, delivery } = timer;
  return {
    tenantId,
    serviceCallId,
    dueAtMs,
    generation,
    occurrence,
    repeat,
    maxLatenessMs,
    commandTs,
    reachedAtMs,
    delivery: delivery ?? null,
  };
}
