/**
 * rawCeiling: what plain JetStream does on this machine, without the service, so that every other
 * figure reads as a ratio. Same stream shape as TIMER_COMMANDS (file storage, work-queue), same
 * message bytes as a ScheduleTimer command, same publisher (2000 in flight), and a consumer process
 * that does what the service's consumer does minus the work: pull 2000 at a time and ack each.
 *  - publishPerSec: publishing N into the stream (no consumer running);
 *  - consumePerSec: the consumer process draining those N (first delivery → acks flushed);
 *  - pipelinePerSec: publishing N more while the consumer runs, first publish → consumer drained
 *    (measured exactly as ingest measures the service).
 */
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { AckPolicy, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import {
  BenchClient,
  CpuMeter,
  REPO_ROOT,
  callId,
  natsPid,
  publishAll,
  round,
  scaled,
  scheduleMessage,
  startNats,
  waitConsumerDrained,
  withTimeout,
  type BenchContext,
  type OutMessage,
} from "../harness.js";

const STREAM = "RAW_COMMANDS";
const DURABLE = "raw";
const IN_FLIGHT = 2_000;

export async function rawCeiling(ctx: BenchContext): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 100_000);
  const nats = await startNats(ctx);
  const client = await BenchClient.connect(ctx, nats.url);
  await addRawStream(client);
  const pids = { nats: natsPid(nats) };
  const batch = rawBatch(n);

  // 1. publish only
  const first = batch(0);
  let cpu = new CpuMeter(pids);
  const p1 = await publishAll(client.nc, first, { inFlight: IN_FLIGHT, timeoutMs: 300_000, label: "rawCeiling publish" });
  const publishS = (p1.lastAckPerfMs - p1.firstPerfMs) / 1000;
  const publishCpu = cpu.read(n);
  ctx.log(`published ${n} in ${publishS.toFixed(2)} s → ${Math.round(n / publishS)}/s`);

  // 2. consume the backlog in a separate process
  const consumer = startRawConsumer(ctx, nats.url, 2 * n, n);
  const { nextLine } = consumer;

  const consumerPids = { ...pids, consumer: consumer.pid };
  await nextLine(0, "raw consumer start"); // {"ready":true}
  cpu = new CpuMeter(consumerPids); // after the consumer's start-up (tsx, connect); it may have begun
  const consumed = await nextLine(1, "raw consumer draining the backlog");
  const consumeCpu = cpu.read(n);
  const consumeS = (consumed.flushedAtMs! - consumed.firstAtMs!) / 1000;
  ctx.log(`consumed ${n} in ${consumeS.toFixed(2)} s → ${Math.round(n / consumeS)}/s`);
  await waitConsumerDrained(client, STREAM, DURABLE, { timeoutMs: 60_000, what: "raw consumer drained" });

  // 3. publish and consume at once (the shape of the ingest scenario)
  const second = batch(n);
  cpu = new CpuMeter(consumerPids);
  let published = false;
  const p3 = publishAll(client.nc, second, { inFlight: IN_FLIGHT, timeoutMs: 300_000, label: "rawCeiling pipeline" }).then((r) => {
    published = true;
    return r;
  });
  const drained = await waitConsumerDrained(client, STREAM, DURABLE, {
    timeoutMs: 300_000,
    what: "raw pipeline drained",
    published: () => published,
  });
  const p3r = await p3;
  const pipelineCpu = cpu.read(n);
  const pipelineS = (drained.perfMs - p3r.firstPerfMs) / 1000;
  ctx.log(`pipeline ${n} in ${pipelineS.toFixed(2)} s → ${Math.round(n / pipelineS)}/s`);
  await nextLine(2, "raw consumer second batch").catch(() => undefined);

  return {
    messages: n,
    messageBytes: first[0]!.data.length,
    inFlight: IN_FLIGHT,
    publishPerSec: Math.round(n / publishS),
    consumePerSec: Math.round(n / consumeS),
    pipelinePerSec: Math.round(n / pipelineS),
    pipelineSeconds: round(pipelineS, 2),
    publishRetries: p1.retries + p3r.retries,
    cpu: { publish: publishCpu, consume: consumeCpu, pipeline: pipelineCpu },
  };
}

/**
 * Only the consume half of the ceiling, on its own nats-server (registered on ctx.scope): N
 * messages queued, then drained by the raw consumer process, first delivery → acks flushed. For
 * scenarios that compare a drain rate with the raw ceiling of the same moment (ingest backlogVsV1).
 */
export async function measureRawConsume(
  ctx: BenchContext,
  n: number,
): Promise<{ consumePerSec: number; seconds: number; cpu: Record<string, number> }> {
  const nats = await startNats(ctx);
  const client = await BenchClient.connect(ctx, nats.url);
  await addRawStream(client);
  await publishAll(client.nc, rawBatch(n)(0), { inFlight: IN_FLIGHT, timeoutMs: 300_000, label: "raw consume publish" });
  const consumer = startRawConsumer(ctx, nats.url, n, n);
  await consumer.nextLine(0, "raw consumer start");
  const cpu = new CpuMeter({ nats: natsPid(nats), consumer: consumer.pid });
  const consumed = await consumer.nextLine(1, "raw consumer draining the backlog");
  const cpuRead = cpu.read(n);
  const seconds = (consumed.flushedAtMs! - consumed.firstAtMs!) / 1000;
  await waitConsumerDrained(client, STREAM, DURABLE, { timeoutMs: 60_000, what: "raw consumer drained" });
  return { consumePerSec: Math.round(n / seconds), seconds: round(seconds, 2), cpu: cpuRead };
}

async function addRawStream(client: BenchClient): Promise<void> {
  await client.jsm.streams.add({ name: STREAM, subjects: ["raw.>"], retention: RetentionPolicy.Workqueue, storage: StorageType.File });
  await client.jsm.consumers.add(STREAM, {
    durable_name: DURABLE,
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(30_000),
    max_ack_pending: 20_000,
    max_deliver: -1,
  });
}

/** `n` ScheduleTimer bodies on raw.* subjects, ids from `from` on. */
function rawBatch(n: number): (from: number) => OutMessage[] {
  const dueAtMs = Date.now() + 30 * 86_400_000;
  return (from) =>
    Array.from({ length: n }, (_, i) => {
      const m = scheduleMessage("bench-raw", callId("raw", from + i), dueAtMs);
      return { subject: `raw.${m.subject}`, data: m.data };
    });
}

/**
 * The raw consumer process (raw-consumer.ts): consumes `total` messages, printing a JSON line after
 * every `every`; line 0 is {"ready":true}. Killed by ctx.scope if still running.
 */
function startRawConsumer(
  ctx: BenchContext,
  url: string,
  total: number,
  every: number,
): { pid: number | undefined; nextLine: (index: number, what: string) => Promise<Record<string, number>> } {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", resolve(REPO_ROOT, "scripts/bench/raw-consumer.ts"), url, STREAM, DURABLE, String(total), String(every), "600"],
    {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  ctx.scope.defer(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let childErr = "";
  child.stderr?.on("data", (chunk: Buffer) => (childErr = (childErr + chunk.toString()).slice(-4_000)));
  const lines: Record<string, number>[] = [];
  let lineWaiter: (() => void) | undefined;
  createInterface({ input: child.stdout! }).on("line", (line) => {
    try {
      lines.push(JSON.parse(line) as Record<string, number>);
      lineWaiter?.();
    } catch {
      // not ours
    }
  });
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code) => reject(new Error(`raw consumer exited with ${code}: ${childErr}`))),
  );
  exited.catch(() => undefined);
  const nextLine = (index: number, what: string): Promise<Record<string, number>> =>
    withTimeout(
      Promise.race([
        new Promise<Record<string, number>>((resolveLine) => {
          const check = (): void => {
            const line = lines[index];
            if (line !== undefined) {
              lineWaiter = undefined;
              resolveLine(line);
            }
          };
          lineWaiter = check;
          check();
        }),
        exited,
      ]),
      300_000,
      what,
    );

  return { pid: child.pid, nextLine };
}
