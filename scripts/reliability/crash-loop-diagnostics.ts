import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
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
 * Why timers did not fire: their state in the services' database (the SQLite file, or the shared
 * Postgres schema), the command consumer's state, whether their commands are still in the
 * work-queue stream; the services' logs go to files.
 */
export async function explainMissing(
  tenantId: string,
  missing: readonly number[],
  commandSeq: Float64Array,
  services: readonly TimerServiceProcess[],
  jsm: JetStreamManager,
  log: (line: string) => void,
): Promise<void> {
  const rows = await storedRows(
    services[0]!,
    tenantId,
    missing.map((i) => `t-${i}`),
  );
  const states = new Map<string, number>();
  for (const i of missing) {
    const state = rows.get(`t-${i}`)?.state ?? "absent";
    states.set(state, (states.get(state) ?? 0) + 1);
  }
  log(`crash-loop: database state of the timers not fired: ${JSON.stringify(Object.fromEntries(states))}`);
  const sample = missing.slice(0, 3).map((i) => ({ id: `t-${i}`, row: rows.get(`t-${i}`) }));
  log(`crash-loop: e.g. ${JSON.stringify(sample)}`);
  const consumer = await jsm.consumers.info("TIMER_COMMANDS", "timer-service").catch((error: unknown) => String(error));
  log(`crash-loop: command consumer: ${JSON.stringify(consumer)}`);
  const stream = await jsm.streams.info("TIMER_COMMANDS").catch(() => undefined);
  log(`crash-loop: commands stream state: ${JSON.stringify(stream?.state)}`);
  for (const i of missing.slice(0, 3)) {
    const stored = await jsm.streams.getMessage("TIMER_COMMANDS", { seq: commandSeq[i]! }).then(
      (m) => m?.string() ?? "not found",
      (error: unknown) => String(error),
    );
    log(`crash-loop: t-${i}: command at sequence ${commandSeq[i]} of the commands stream: ${stored}`);
  }
  for (const [index, service] of services.entries()) {
    const file = join(tmpdir(), `crash-loop-service-${Date.now()}-${index}.log`);
    writeFileSync(file, `${service.logLines.join("\n")}\n${service.stderr}`);
    log(`crash-loop: service ${index} log lines in ${file}`);
  }
}

interface StoredRow {
  readonly state: string;
  readonly commandTs: number;
  readonly updatedAt: number;
}

/** The rows of `ids` in the store the service was configured with. */
async function storedRows(service: TimerServiceProcess, tenantId: string, ids: readonly string[]): Promise<Map<string, StoredRow>> {
  const columns = 'service_call_id AS id, state, command_ts AS "commandTs", updated_at AS "updatedAt"';
  if (service.env.TIMER_STORE === "postgres") {
    const client = new pg.Client({ connectionString: service.env.TIMER_DATABASE_URL });
    await client.connect();
    try {
      const { rows } = await client.query<StoredRow & { id: string }>(
        `SELECT ${columns} FROM "${service.env.TIMER_DATABASE_SCHEMA}".timer_schedules WHERE tenant_id = $1 AND service_call_id = ANY($2::text[])`,
        [tenantId, ids],
      );
      return new Map(rows.map((row) => [row.id, row]));
    } finally {
      await client.end();
    }
  }
  const db = new Database(service.env.TIMER_DB_PATH!, { readonly: true, fileMustExist: true });
  try {
    const select = db.prepare(`SELECT ${columns} FROM timer_schedules WHERE tenant_id = ? AND service_call_id = ?`);
    const rows = new Map<string, StoredRow>();
    for (const id of ids) {
      const row = select.get(tenantId, id) as (StoredRow & { id: string }) | undefined;
      if (row !== undefined) rows.set(id, row);
    }
    return rows;
  } finally {
    db.close();
  }
}
