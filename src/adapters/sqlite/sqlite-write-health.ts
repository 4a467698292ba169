import { StorageProbe, type StorageProbeOptions } from "../storage/storage-probe.js";

/** SQLITE_BUSY and SQLITE_LOCKED, with their extended codes. */
function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"));
}

/**
 * The storage readiness of a SQLite store: whether its last write transaction succeeded, and a
 * background health check that takes the write lock and gives it back, so that a database locked by
 * another process shows even while nothing writes (CONTRACT §16). A failed write counts until a
 * write succeeds, or, when it failed only because the database was locked, until the check gets
 * the lock.
 */
export class SqliteWriteHealth {
  #lastWriteFailed = false;
  #lastWriteBusy = false;
  #probe: StorageProbe | undefined;

  /** Awaits `write`, remembering whether it failed (busy, read-only, disk full). */
  async track<T>(write: Promise<T>): Promise<T> {
    try {
      const result = await write;
      this.#lastWriteFailed = this.#lastWriteBusy = false;
      return result;
    } catch (error) {
      this.failed(error);
      throw error;
    }
  }

  /** Starts the health check; `takeWriteLock` takes the write lock and gives it back, or throws. */
  startProbe(takeWriteLock: () => Promise<void> | void, options: StorageProbeOptions): void {
    this.#probe = new StorageProbe(async () => {
      await takeWriteLock();
      if (this.#lastWriteBusy) this.#lastWriteFailed = this.#lastWriteBusy = false;
    }, options);
    this.#probe.start();
  }

  stopProbe(): void {
    this.#probe?.stop();
  }

  /** The last write succeeded (or only found a lock the check has since got) and the check passes. */
  get healthy(): boolean {
    return !this.#lastWriteFailed && this.#probe?.healthy !== false;
  }

  /** Why the health check fails, for the outage log. */
  get fault(): string | undefined {
    const error = this.#probe?.lastError;
    return error === undefined ? undefined : error instanceof Error ? error.message : String(error);
  }

  private failed(error: unknown): void {
    this.#lastWriteFailed = true;
    this.#lastWriteBusy = isBusy(error);
  }
}
