import pg from "pg";
import type { ReadBack } from "./history.js";

const POLL_EVERY_MS = 250;

interface Watch {
  readonly change: "cancel" | "reschedule";
  /** A reschedule's new due time. */
  readonly newDueAtMs: number | undefined;
  readonly resolve: (readBack: ReadBack) => void;
}

/**
 * Reads timers straight from Postgres (not through the instances' faulty links) until a cancel or
 * reschedule shows its outcome: the first time it does bounds when the command committed. A cancel
 * shows as `Cancelled`, or `Reached` when the timer fired first (Reached is final); a reschedule as
 * its new due time, or `Reached` at the old one.
 */
export class ReadBackPoller {
  private readonly watches = new Map<string, Watch>();
  private readonly timer: NodeJS.Timeout;
  private polling = false;

  private constructor(
    private readonly client: pg.Pool,
    private readonly schema: string,
    private readonly tenantId: string,
  ) {
    this.timer = setInterval(() => void this.poll(), POLL_EVERY_MS);
  }

  static async start(databaseUrl: string, schema: string, tenantId: string): Promise<ReadBackPoller> {
    // A pool of one, not a client: it reconnects after the database's address moved (failover-postgres).
    const client = new pg.Pool({ connectionString: databaseUrl, max: 1 });
    client.on("error", () => {});
    await client.query("SELECT 1");
    return new ReadBackPoller(client, schema, tenantId);
  }

  get pending(): number {
    return this.watches.size;
  }

  watch(serviceCallId: string, change: Watch["change"], newDueAtMs: number | undefined, resolve: Watch["resolve"]): void {
    this.watches.set(serviceCallId, { change, newDueAtMs, resolve });
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.client.end().catch(() => undefined);
  }

  private async poll(): Promise<void> {
    if (this.polling || this.watches.size === 0) return;
    this.polling = true;
    try {
      const { rows } = await this.client.query<{ id: string; state: string; generation: number; due_at: string | null }>(
        `SELECT service_call_id AS id, state, generation, due_at FROM "${this.schema}".timer_schedules WHERE tenant_id = $1 AND service_call_id = ANY($2)`,
        [this.tenantId, [...this.watches.keys()]],
      );
      const observedAtMs = Date.now();
      for (const row of rows) {
        const watch = this.watches.get(row.id);
        if (watch === undefined) continue;
        const dueAtMs = row.due_at === null ? null : Number(row.due_at);
        const shown = row.state === "Reached" || (watch.change === "cancel" ? row.state === "Cancelled" : dueAtMs === watch.newDueAtMs);
        if (!shown) continue;
        this.watches.delete(row.id);
        watch.resolve({
          observedAtMs,
          state: row.state,
          generation: row.generation,
          dueAtMs: row.due_at === null ? null : Number(row.due_at),
        });
      }
    } catch {
      // A failed read is retried at the next poll.
    } finally {
      this.polling = false;
    }
  }
}
