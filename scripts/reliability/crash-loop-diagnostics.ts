import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { TimerServiceProcess } from "../../test/support/timer-service-process.js";

/** What the crash loop logs to explain a loss: broker-side sequences, database and consumer state. */

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Last sequence of each stream, for the log (a smaller one after a broker restart = lost messages). */
export async function lastSequences(jsm: JetStreamManager, waitMs = 0): Promise<Record<string, number> | string> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      const events = (await jsm.streams.info("TIMER_EVENTS")).state.last_seq;
      const commands = (await jsm.streams.info("TIMER_COMMANDS")).state.last_seq;
      return { events, commands };
    } catch (error) {
      if (Date.now() > deadline) return String(error);
      await sleep(100);
    }
  }
}

/**
 * Why timers did not fire: their state in the service's database, the command consumer's state,
 * whether their commands are still in the work-queue stream; the service's log goes to a file.
 */
export async function explainMissing(
  tenantId: string,
  missing: readonly number[],
  commandSeq: Float64Array,
  service: TimerServiceProcess,
  jsm: JetStreamManager,
  log: (line: string) => void,
): Promise<void> {
  const db = new Database(service.env.TIMER_DB_PATH!, { readonly: true, fileMustExist: true });
  try {
    const select = db.prepare("SELECT state, command_ts AS commandTs, updated_at AS updatedAt FROM timer_schedules WHERE tenant_id = ? AND service_call_id = ?");
    const states = new Map<string, number>();
    for (const i of missing) {
      const row = select.get(tenantId, `t-${i}`) as { state: string } | undefined;
      const state = row?.state ?? "absent";
      states.set(state, (states.get(state) ?? 0) + 1);
    }
    log(`crash-loop: database state of the timers not fired: ${JSON.stringify(Object.fromEntries(states))}`);
    const sample = missing.slice(0, 3).map((i) => ({ id: `t-${i}`, row: select.get(tenantId, `t-${i}`) }));
    log(`crash-loop: e.g. ${JSON.stringify(sample)}`);
  } finally {
    db.close();
  }
  const consumer = await jsm.consumers.info("TIMER_COMMANDS", "timer-service").catch((error: unknown) => String(error));
  log(`crash-loop: command consumer: ${JSON.stringify(consumer)}`);
  const stream = await jsm.streams.info("TIMER_COMMANDS").catch(() => undefined);
  log(`crash-loop: commands stream state: ${JSON.stringify(stream?.state)}`);
  for (const i of missing.slice(0, 3)) {
    const stored = await jsm.streams
      .getMessage("TIMER_COMMANDS", { seq: commandSeq[i]! })
      .then((m) => m?.string() ?? "not found", (error: unknown) => String(error));
    log(`crash-loop: t-${i}: command at sequence ${commandSeq[i]} of the commands stream: ${stored}`);
  }
  const file = join(tmpdir(), `crash-loop-service-${Date.now()}.log`);
  writeFileSync(file, `${service.logLines.join("\n")}\n${service.stderr}`);
  log(`crash-loop: service log lines in ${file}`);
}
