import type pg from "pg";

/** New rows before the first ANALYZE of a table that has no statistics yet. */
const FIRST_ANALYZE_ROWS = 500;

/**
 * Refreshes the planner's statistics of `timer_schedules` each time the rows this store inserted
 * since the last refresh reach what the table held then (the table doubled), and after its first
 * FIRST_ANALYZE_ROWS. Autovacuum looks at a table about once a minute; a store that starts empty
 * and takes a flood of commands meanwhile has no statistics, and then the planner looks up a
 * batch's keys through whichever index with `tenant_id` first is smallest, reading the tenant's
 * whole range for every key (seconds per batch at 15,000 rows). One ANALYZE samples at most 30,000
 * rows, and the doubling keeps them to a few dozen over any table's life.
 */
export class GrowthAnalyzer {
  #insertedSinceAnalyze = 0;
  /** Rows the table held at the last ANALYZE, as Postgres estimated them; undefined until read. */
  #rowsAtAnalyze: number | undefined;
  #running: Promise<void> | undefined;

  constructor(private readonly pool: pg.Pool) {}

  /** `rows` rows were inserted by a committed batch. */
  inserted(rows: number): void {
    this.#insertedSinceAnalyze += rows;
    if (this.#running === undefined && this.#due()) this.#running = this.#refresh().finally(() => (this.#running = undefined));
  }

  /**
   * Refreshes them now when rows were inserted since the last refresh: the end of an import, whose
   * table a service is about to use.
   */
  async settle(): Promise<void> {
    await this.#running;
    if (this.#insertedSinceAnalyze > 0) await this.#analyze();
  }

  #due(): boolean {
    return this.#insertedSinceAnalyze >= Math.max(FIRST_ANALYZE_ROWS, this.#rowsAtAnalyze ?? 0);
  }

  async #refresh(): Promise<void> {
    // A store opened on a table that is already large starts from the statistics it finds.
    if (this.#rowsAtAnalyze === undefined) {
      this.#rowsAtAnalyze = await this.#estimatedRows().catch(() => 0);
      if (!this.#due()) return;
    }
    await this.#analyze();
  }

  async #analyze(): Promise<void> {
    this.#insertedSinceAnalyze = 0;
    try {
      // A role that does not own the table gets a warning and no ANALYZE: autovacuum's then.
      await this.pool.query("ANALYZE timer_schedules");
      this.#rowsAtAnalyze = await this.#estimatedRows();
    } catch {
      // Statistics are an optimisation: a failed refresh (an outage the writes report) is retried at the next threshold.
    }
  }

  /** The table's rows at its last ANALYZE or VACUUM (-1 when it had none: 0 here). */
  async #estimatedRows(): Promise<number> {
    const { rows } = await this.pool.query<{ reltuples: number }>("SELECT reltuples FROM pg_class WHERE oid = 'timer_schedules'::regclass");
    return Math.max(0, rows[0]?.reltuples ?? 0);
  }
}
