import { setImmediate } from "node:timers";
import { parentPort, workerData } from "node:worker_threads";
import type { Firing } from "../../app/timer-store.js";
import { openSqliteConnection, type SqliteConnectionOptions } from "./sqlite-timer-store.js";
import { SqliteWriter } from "./sqlite-writer.js";
import type { WriterReply, WriterRequest } from "./sqlite-writer-protocol.js";

/**
 * The writer thread: every write to the SQLite file runs here, one at a time in arrival order, so
 * that the event loop of the main thread never waits for a commit (its pages, its fsync). Firing
 * records queued back to back share one transaction. While a command batch or a sweep step waits
 * for the main thread's decision, only that batch's own commit or rollback may run.
 */
const { path, ...connection } = workerData as SqliteConnectionOptions & { readonly path: string };
const port = parentPort!;
const writer = new SqliteWriter(openSqliteConnection(path, connection));

const queue: WriterRequest[] = [];
/** The id of the `begin…` request whose transaction is open. */
let session: number | undefined;
let draining = false;

port.on("message", (request: WriterRequest) => {
  queue.push(request);
  // At the end of the turn: the messages that arrived during a commit are all queued by then.
  if (!draining) {
    draining = true;
    setImmediate(drain);
  }
});
port.postMessage({ ready: true });

function drain(): void {
  for (;;) {
    const at = session === undefined ? 0 : queue.findIndex((request) => request.session === session);
    if (at < 0 || at >= queue.length) break;
    if (queue[at]!.op === "recordFirings" && session === undefined) {
      let count = 1;
      while (queue[count]?.op === "recordFirings") count += 1;
      recordFirings(queue.splice(0, count));
    } else {
      handle(queue.splice(at, 1)[0]!);
    }
  }
  draining = false;
}

function recordFirings(requests: readonly WriterRequest[]): void {
  try {
    // Each request carries its calls (the main thread sends one); each gets its own part of the result.
    const calls = requests.map((request) => request.args[0] as readonly (readonly Firing[])[]);
    const recorded = writer.recordFirings(calls.flat());
    let offset = 0;
    requests.forEach((request, i) => {
      reply({ id: request.id, result: recorded.slice(offset, offset + calls[i]!.length) });
      offset += calls[i]!.length;
    });
  } catch (error) {
    for (const request of requests) reply({ id: request.id, error: errorReply(error) });
  }
}

function handle(request: WriterRequest): void {
  const { id, op, args } = request;
  try {
    if (op === "close") {
      writer.close();
      reply({ id });
      port.close();
      return;
    }
    const result = (writer[op] as (...a: unknown[]) => unknown)(...args);
    if (op === "beginCommands" || (op === "beginSweep" && result !== undefined)) session = id;
    if (op === "commitCommands" || op === "commitSweep" || op === "rollback") session = undefined;
    reply({ id, result });
  } catch (error) {
    // Whatever failed of an open batch (its commit, or the answer to its begin) ends it: the main
    // thread sends nothing more for it.
    if (session !== undefined && (session === id || session === request.session)) {
      writer.rollback();
      session = undefined;
    }
    reply({ id, error: errorReply(error) });
  }
}

function reply(message: WriterReply): void {
  port.postMessage(message);
}

function errorReply(error: unknown): WriterReply["error"] {
  const { message, code, name } = error as { message?: unknown; code?: unknown; name?: unknown };
  return {
    message: typeof message === "string" ? message : String(error),
    ...(typeof code === "string" ? { code } : {}),
    ...(typeof name === "string" ? { name } : {}),
  };
}
