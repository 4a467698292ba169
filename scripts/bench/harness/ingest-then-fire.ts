import {
  COMMANDS_CONSUMER,
  COMMANDS_STREAM,
  publishAll,
  waitConsumerDrained,
  type BenchClient,
  type DueEventCollector,
  type OutMessage,
} from "./bench-client.js";
import { monoUs } from "./context.js";
import { sleep } from "./log.js";
import { CpuMeter } from "./proc.js";

/**
 * Publishes `schedules` (all due at `dueAtMs`), waits until the service stored them, waits for the
 * due time, then for their `n` events: the CPU of each phase per item. `valid` is false when the
 * ingest ran past the due time, so the phases overlapped. `windows`: each phase on CLOCK_MONOTONIC
 * µs, for --profile's summaries of that phase.
 */
export async function measureIngestThenFire(
  client: BenchClient,
  events: DueEventCollector,
  pids: Readonly<Record<string, number | undefined>>,
  run: { readonly schedules: readonly OutMessage[]; readonly dueAtMs: number; readonly budgetMs: number; readonly label: string },
): Promise<{
  valid: boolean;
  ingest: ReturnType<CpuMeter["read"]>;
  fire: ReturnType<CpuMeter["read"]>;
  windows: { ingest: { fromUs: number; toUs: number }; fire: { fromUs: number; toUs: number } };
}> {
  const { schedules, dueAtMs, budgetMs, label } = run;
  const n = schedules.length;
  const ingestFromUs = monoUs();
  const ingestCpu = new CpuMeter(pids);
  await publishAll(client.nc, schedules, { inFlight: 2_000, timeoutMs: budgetMs + 60_000, label: `${label} ingest` });
  await waitConsumerDrained(client, COMMANDS_STREAM, COMMANDS_CONSUMER, { timeoutMs: 120_000, what: `${label} stored` });
  const ingest = ingestCpu.read(n);
  const ingestToUs = monoUs();
  const valid = Date.now() < dueAtMs;
  await sleep(dueAtMs - Date.now());
  const fireFromUs = monoUs();
  const fireCpu = new CpuMeter(pids);
  await events.waitFor(n, 120_000, `${label} fire`);
  const fire = fireCpu.read(n);
  const windows = { ingest: { fromUs: ingestFromUs, toUs: ingestToUs }, fire: { fromUs: fireFromUs, toUs: monoUs() } };
  return { valid, ingest, fire, windows };
}
