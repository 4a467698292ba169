import { Kvm, type KV, type KvEntry } from "@nats-io/kv";
import type { JetStreamClient } from "@nats-io/jetstream";
import type { Logger } from "../../app/logger.js";
import { PeriodicLoop } from "../../app/periodic-loop.js";
import { systemClock } from "../clock/system-clock.js";

/** Who holds the lease: the database it names decides; the rest helps an operator find it. */
export interface LeaseHolder {
  /** The id of the database (a SQLite file's own random id). */
  readonly storeId: string;
  readonly instance: string;
  readonly location: string;
}

export interface ConsumerLeaseOptions {
  readonly bucket: string;
  /** What is leased: the durable consumer (stream and name). */
  readonly key: string;
  readonly holder: LeaseHolder;
  /** The lease lapses this long after its last renewal (an instance killed with -9). */
  readonly ttlMs: number;
  readonly replicas: number;
  readonly logger: Logger;
  /** Acquired (or re-acquired): start consuming and firing. */
  readonly onAcquired: () => void;
  /** Another database holds it now: stop consuming and firing. */
  readonly onLost: () => void;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** How long `stop` waits for a renewal in hand before it gives the lease up. */
const STOP_RENEWAL_WAIT_MS = 1_000;
/** A blocked instance says why at most this often. */
const BLOCKED_LOG_INTERVAL_MS = 30_000;

/**
 * A lease in a JetStream key-value bucket on the command consumer, naming the SQLite database of the
 * instance that uses it (CONTRACT §6: one SQLite instance per consumer). The holder renews it every
 * third of its TTL; the bucket's max age ends a lease nobody renews. A restart on the same database
 * takes it back at once; an instance with another database waits, not ready, and says why.
 */
export class JetStreamConsumerLease {
  held = false;
  private kv: KV | undefined;
  private revision = 0;
  private readonly renewals: PeriodicLoop;
  private stopped = false;
  private lastBlockedLogMs = 0;

  constructor(
    private readonly js: JetStreamClient,
    private readonly options: ConsumerLeaseOptions,
  ) {
    this.renewals = new PeriodicLoop(systemClock, Math.max(250, Math.floor(options.ttlMs / 3)), () => this.tick(), { immediately: true });
  }

  /** Tries now and then every third of the TTL, for as long as it runs. */
  start(): void {
    this.renewals.start();
  }

  /** Stops renewing and gives the lease up, so that another database may take it at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    // A renewal in hand lands first (waited for briefly), so that the delete below removes what it wrote.
    await Promise.race([this.renewals.stop(), new Promise((resolve) => setTimeout(resolve, STOP_RENEWAL_WAIT_MS).unref())]);
    this.held = false;
    // Never written (blocked all along): nothing to give up.
    if (this.kv === undefined || this.revision === 0) return;
    try {
      // Deleted only if still ours: a revision mismatch means someone else has it already.
      await this.kv.delete(this.options.key, { previousSeq: this.revision });
    } catch {
      // It lapses by itself after the TTL.
    }
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.renewOrAcquire();
    } catch (error) {
      // The broker is away or the bucket is being recreated: keep what we have until it answers.
      this.options.logger.warn({ err: error, held: this.held }, "consumer lease could not be checked; retrying");
      this.kv = undefined;
    }
  }

  private async renewOrAcquire(): Promise<void> {
    const kv = (this.kv ??= await new Kvm(this.js).create(this.options.bucket, {
      ttl: this.options.ttlMs,
      history: 1,
      replicas: this.options.replicas,
    }));
    const value = encoder.encode(JSON.stringify({ ...this.options.holder, renewedAt: new Date().toISOString() }));
    const entry = await kv.get(this.options.key);
    const current = live(entry) ? parseHolder(entry!) : undefined;
    if (current !== undefined && current.storeId !== this.options.holder.storeId) {
      this.blockedBy(current);
      return;
    }
    // Free, or ours (a renewal, or a restart on the same database): write it, guarded by revision.
    this.revision = entry === null ? await kv.create(this.options.key, value) : await kv.update(this.options.key, value, entry.revision);
    // Not once stopping: the work it would start again is being stopped.
    if (!this.held && !this.stopped) {
      this.held = true;
      this.options.logger.info({ key: this.options.key, storeId: this.options.holder.storeId }, "consumer lease acquired");
      this.options.onAcquired();
    }
  }

  private blockedBy(other: LeaseHolder): void {
    if (this.held) {
      this.held = false;
      this.options.logger.error(
        { key: this.options.key, heldBy: other },
        "consumer lease taken by another database; stopped consuming and firing",
      );
      this.options.onLost();
    }
    const now = Date.now();
    if (now - this.lastBlockedLogMs < BLOCKED_LOG_INTERVAL_MS) return;
    this.lastBlockedLogMs = now;
    this.options.logger.error(
      { key: this.options.key, heldBy: other, storeId: this.options.holder.storeId },
      "another instance with another SQLite database uses this consumer: this instance neither consumes nor fires. " +
        "Stop the other instance (its lease lapses after TIMER_CLAIM_TTL_MS), give this one the same database, " +
        "or use TIMER_STORE=postgres to run several instances",
    );
  }
}

function live(entry: KvEntry | null): boolean {
  return entry !== null && entry.operation === "PUT";
}

function parseHolder(entry: KvEntry): LeaseHolder | undefined {
  try {
    const parsed = JSON.parse(decoder.decode(entry.value)) as Partial<LeaseHolder>;
    return typeof parsed.storeId === "string" ? (parsed as LeaseHolder) : undefined;
  } catch {
    return undefined;
  }
}
