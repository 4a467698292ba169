/**
 * The BullMQ worker of the peer bench, run as its own process (like our service) so that its CPU
 * is measured apart from the bench's. A job "fires" when the processor is called; the processor
 * records the job's index and the wall time and does nothing else. Talks to the bench over IPC:
 * `ready` once the worker is running, `progress` with the number of fired jobs, and on `collect`
 * the recorded (index, time) pairs; exits on `stop`.
 */
import { Worker } from "bullmq";

const port = Number(process.env.BENCH_REDIS_PORT);
const queueName = process.env.BENCH_QUEUE ?? "";
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? "100");
if (!Number.isInteger(port) || queueName === "" || process.send === undefined) {
  process.stderr.write("bullmq-worker: needs BENCH_REDIS_PORT, BENCH_QUEUE and an IPC channel\n");
  process.exit(2);
}

let indexes: number[] = [];
let times: number[] = [];

const worker = new Worker(
  queueName,
  async (job) => {
    times.push(Date.now());
    indexes.push((job.data as { i: number }).i);
  },
  { connection: { host: "127.0.0.1", port, maxRetriesPerRequest: null }, concurrency, autorun: false },
);
worker.on("error", (error) => process.stderr.write(`bullmq-worker: ${String(error)}\n`));

let reported = -1;
const progress = setInterval(() => {
  if (indexes.length === reported) return;
  reported = indexes.length;
  process.send!({ type: "progress", count: reported });
}, 20);

process.on("message", (message: { type?: string }) => {
  if (message.type === "collect") {
    process.send!({ type: "fired", indexes, times });
    indexes = [];
    times = [];
    reported = -1;
  } else if (message.type === "stop") {
    clearInterval(progress);
    void worker.close().finally(() => process.exit(0));
  }
});

void worker.run();
await worker.waitUntilReady();
process.send({ type: "ready" });
