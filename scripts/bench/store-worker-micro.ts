/**
 * What a second thread for the store would give the command path, measured before building it
 * (docs/adr/0011-both-cores.md): decode → decide → SQLite store in process, no NATS, once on one
 * thread (as the service runs today) and once split: the main thread decodes batch k+1 while a
 * worker thread applies batch k with the same store and rules; the worker answers with what the
 * consumer needs to settle (outcomes, earliest due time).
 *
 *   node --import tsx scripts/bench/store-worker-micro.ts [--commands 100000] [--batch 2000] [--rounds 2]
 *
 * Prints, per mode, commands/s (wall) and CPU µs per command (all threads of the process).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { openSqliteTimerStore, type SqliteTimerStore } from "../../src/adapters/sqlite/sqlite-timer-store.js";
import type { TimerCommand } from "../../src/domain/timer-command.js";
import { decideCommand } from "../../src/domain/timer-rules.js";
import { randomScheduleDeliveries, round, serviceDecoding } from "./harness.js";

/** What the consumer needs back from a stored batch. */
interface Stored {
  readonly outcomes: string[];
  readonly earliestDueAtMs: number;
}

function storeBatch(store: SqliteTimerStore, commands: readonly TimerCommand[]): Promise<Stored> {
  const nowMs = Date.now();
  return store
    .applyCommands(commands, (current, command, context) => decideCommand(current, command, nowMs, context))
    .then((decisions) => {
      let earliestDueAtMs = Number.POSITIVE_INFINITY;
      for (const { next } of decisions)
        if (next?.state === "Scheduled" && next.dueAtMs !== null) earliestDueAtMs = Math.min(earliestDueAtMs, next.dueAtMs);
      return { outcomes: decisions.map((d) => d.outcome), earliestDueAtMs };
    });
}

if (!isMainThread) {
  const store = openSqliteTimerStore({ path: (workerData as { path: string }).path });
  parentPort!.postMessage("ready");
  parentPort!.on("message", (message: { id: number; commands: TimerCommand[] } | "close") => {
    if (message === "close") {
      void store.close().then(() => parentPort!.close());
      return;
    }
    void storeBatch(store, message.commands).then((stored) => parentPort!.postMessage({ id: message.id, stored }));
  });
} else {
  const { values } = parseArgs({ options: { commands: { type: "string" }, batch: { type: "string" }, rounds: { type: "string" } } });
  const COMMANDS = Number(values.commands ?? 100_000);
  const BATCH = Number(values.batch ?? 2_000);
  const ROUNDS = Number(values.rounds ?? 2);
  const { decoder } = serviceDecoding();
  const messages = (seed: number) => randomScheduleDeliveries(COMMANDS, seed);
  const decodeBatch = (batch: ReturnType<typeof messages>): TimerCommand[] =>
    batch.flatMap((m) => {
      const decoded = decoder.decode(m);
      return decoded.ok ? [decoded.command] : [];
    });
  const cpuUs = () => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };

  /** A mode: opens its store (not measured), then returns the measured run over `all` and the close. */
  type Mode = (path: string) => Promise<{ run(all: ReturnType<typeof messages>): Promise<void>; close(): Promise<void> }>;

  const oneThread: Mode = async (path) => {
    const store = openSqliteTimerStore({ path });
    return {
      async run(all) {
        for (let i = 0; i < all.length; i += BATCH) await storeBatch(store, decodeBatch(all.slice(i, i + BATCH)));
      },
      close: () => store.close(),
    };
  };

  const twoThreads: Mode = async (path) => {
    // The worker runs this TypeScript file too, through tsx's loader registered in that thread.
    const boot = `import("tsx/esm/api").then(({ register }) => { register(); return import(${JSON.stringify(import.meta.url)}); })`;
    const worker = new Worker(boot, { eval: true, workerData: { path } });
    await new Promise((resolve) => worker.once("message", resolve));
    const waiting = new Map<number, () => void>();
    worker.on("message", ({ id }: { id: number; stored: Stored }) => waiting.get(id)?.());
    return {
      async run(all) {
        // One batch stored while the next is decoded: at most two in flight.
        let inFlight: Promise<void> | undefined;
        for (let i = 0, id = 0; i < all.length; i += BATCH, id++) {
          const commands = decodeBatch(all.slice(i, i + BATCH));
          const done = new Promise<void>((resolve) => waiting.set(id, resolve));
          await inFlight;
          worker.postMessage({ id, commands });
          inFlight = done;
        }
        await inFlight;
      },
      async close() {
        const exited = new Promise((resolve) => worker.once("exit", resolve));
        worker.postMessage("close");
        await exited;
      },
    };
  };

  const dir = mkdtempSync(join(tmpdir(), "store-worker-micro-"));
  const results: Record<string, unknown>[] = [];
  try {
    for (let r = 0; r < ROUNDS; r++) {
      for (const [mode, run] of [
        ["one thread", oneThread],
        ["two threads", twoThreads],
      ] as const) {
        const all = messages(0x5eed + r);
        const opened = await run(join(dir, `${mode.replace(" ", "-")}-${r}.db`));
        const cpu = cpuUs();
        const wall = performance.now();
        await opened.run(all);
        const seconds = (performance.now() - wall) / 1000;
        const usPerCommand = (cpuUs() - cpu) / COMMANDS;
        await opened.close();
        results.push({ round: r, mode, commandsPerSec: Math.round(COMMANDS / seconds), cpuUsPerCommand: round(usPerCommand, 1) });
        process.stderr.write(
          `round ${r} ${mode}: ${Math.round(COMMANDS / seconds)} commands/s, ${usPerCommand.toFixed(1)} µs CPU per command\n`,
        );
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(JSON.stringify({ commands: COMMANDS, batch: BATCH, results }));
}
