import { setImmediate, setTimeout } from "node:timers";
import { parentPort, workerData } from "node:worker_threads";
import { openSqliteConnection, type SqliteConnectionOptions } from "./sqlite-connection.js";
import { SqliteWriter } from "./sqlite-writer.js";
import { performWriterCall, type WriterReply, type WriterRequest } from "./sqlite-writer-protocol.js";

/**
 * The writer thread: every write to the SQLite file runs here, one request at a time in arrival
 * order (that order is the order of the main thread's calls), so that the event loop of the main
 * thread never waits for a commit (its pages, its fsync). A command batch is decided here, inside
 * its transaction. Firing records queued back to back share one transaction (gathered for a few
 * milliseconds during a burst).
 */
const { path, ...connection } = workerData as SqliteConnectionOptions & { readonly path: string };
const port = parentPort!;
const writer = new SqliteWriter(openSqliteConnection(path, connection));

/**
 * While timers fire in a burst, a firing record that finds the queue idle waits this long for the
 * records of the other polls in flight, which come a few milliseconds apart: a fair poll takes a
 * timer or two of each tenant, and one transaction for several polls dirties each tenant's index
 * pages once instead of once per poll (docs/benchmarks.md, "The fire path with many tenants"). Its
 * events are out already (publish, then record): the wait delays the record, not the firing.
 */
const BURST_GATHER_MS = 3;
/** A firing record this soon after the last one is part of a burst; an isolated one is written at once. */
const BURST_GAP_MS = 50;

const queue: WriterRequest[] = [];
let draining = false;
let lastFiringsAtMs = Number.NEGATIVE_INFINITY;
/** The wait of a firing record for others, while it lasts. */
let gathering: NodeJS.Timeout | undefined;

port.on("message", (request: WriterRequest) => {
  queue.push(request);
  const firing = request.op === "recordFirings";
  if (draining) {
    // Anything else (a command batch, a close) does not wait for records: the queue goes now.
    if (gathering !== undefined && !firing) {
      clearTimeout(gathering);
      gathering = undefined;
      setImmediate(drain);
    }
    return;
  }
  draining = true;
  if (firing && performance.now() - lastFiringsAtMs < BURST_GAP_MS) gathering = setTimeout(drain, BURST_GATHER_MS);
  // At the end of the turn: the messages that arrived during a commit are all queued by then.
  else setImmediate(drain);
});
port.postMessage({ ready: true });

type FiringsRequest = Extract<WriterRequest, { op: "recordFirings" }>;

function drain(): void {
  gathering = undefined;
  while (queue.length > 0) {
    if (queue[0]!.op === "recordFirings") {
      let count = 1;
      while (queue[count]?.op === "recordFirings") count += 1;
      recordFirings(queue.splice(0, count) as FiringsRequest[]);
    } else {
      handle(queue.shift()!);
    }
  }
  draining = false;
}

/** The records of several requests in one transaction; each request gets its own part. */
function recordFirings(requests: readonly FiringsRequest[]): void {
  try {
    const recorded = writer.recordFirings(requests.map((request) => request.firings));
    lastFiringsAtMs = performance.now();
    requests.forEach((request, i) => reply({ id: request.id, result: recorded[i] }));
  } catch (error) {
    for (const request of requests) reply({ id: request.id, error: errorReply(error) });
  }
}

function handle(request: WriterRequest): void {
  try {
    reply({ id: request.id, result: performWriterCall(writer, request) });
    if (request.op === "close") port.close();
  } catch (error) {
    reply({ id: request.id, error: errorReply(error) });
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
