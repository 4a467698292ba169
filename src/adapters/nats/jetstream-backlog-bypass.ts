import { JetStreamApiError, type ConsumerInfo, type JetStreamManager, type MsgRequest, type StoredMsg } from "@nats-io/jetstream";
import type { Logger } from "../../app/logger.js";
import { tenantsWithin } from "./backlog-tenants.js";
import { BypassLedger } from "./bypass-ledger.js";
import { publishedSubject, sourceSubjects, tenantSubjects, type CommandSource } from "./command-partitions.js";
import { StoredDeliveredCommand } from "./stored-delivered-command.js";

/** A source's consumer with at least this many commands not yet delivered is flooded: its small tenants are read directly. */
export const BYPASS_BACKLOG_MIN = 2_000;
/** A tenant with more commands stored in a flooded source than this is a flooder too and stays in the consumer's lane. */
export const BYPASS_TENANT_MAX = 1_000;
/** Commands the bypass holds at once, handed over and not yet settled (its memory bound). */
const ROUND_MAX = 2_000;
/** Tenants read at the same time (each is a chain of one request per message). */
const READ_CONCURRENCY = 4;
/** How often the consumers' backlogs are looked at when the last round found nothing to read. */
const IDLE_MS = 250;
/** A failing round (permissions, a leader election) is logged at most this often. */
const WARN_EVERY_MS = 60_000;

/**
 * The lane beside a flooded consumer (ADR-0010). A durable consumer delivers in stream order, so a
 * tenant whose commands share a partition with a flooder's 200,000 would wait for all of them. When
 * a source's consumer has at least BYPASS_BACKLOG_MIN commands not yet delivered, this reads the
 * per-subject counts of the source, and for each tenant with at most BYPASS_TENANT_MAX stored, reads
 * its commands from the stream by subject (`next_by_subj`), after the consumer's delivered sequence
 * (what the consumer handed over stays its own), and hands them to the same batches as the
 * consumers'. After the processor's decision: ack or term removes the message from the stream (the
 * work-queue equivalent of an ack), a nak leaves it there for its delay (ledger).
 *
 * Duplicates are harmless and rare: the consumer may deliver a message between its info and the
 * read (one at the edge of its delivered sequence), and several instances may read the same one; a
 * command applied twice changes nothing the second time (CONTRACT §3.2), a rejection's event has
 * the same id, and removing a message already removed fails quietly.
 *
 * One round at a time; a round holds at most ROUND_MAX messages until they are settled.
 */
export class JetStreamBacklogBypass {
  private readonly ledger = new BypassLedger();
  private stopped = false;
  private running: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private lastWarnMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly jsm: JetStreamManager,
    private readonly options: {
      readonly stream: string;
      /** The sources the consumers pull, read every round. */
      readonly sources: () => readonly CommandSource[];
      /** Into the service's batches; the command's settlement comes back through `settled`. */
      readonly hand: (command: StoredDeliveredCommand) => void;
      readonly logger: Logger;
      readonly nowMs?: () => number;
    },
  ) {}

  start(): void {
    if (this.running !== undefined || this.stopped) return;
    this.running = this.loop().finally(() => (this.running = undefined));
  }

  /** Stops reading; resolves once what was handed over is settled (the service's drain settles it). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.running;
  }

  /** One round: reads what the flooded sources' small tenants have queued; returns how many were handed over. */
  async round(): Promise<number> {
    const sources = this.options.sources();
    if (sources.length === 0) return 0;
    const consumers = new Map<string, ConsumerInfo>();
    for await (const info of this.jsm.consumers.list(this.options.stream)) consumers.set(info.name, info);
    const handed: Promise<void>[] = [];
    try {
      for (const source of sources) {
        const consumer = consumers.get(source.consumer);
        if (consumer === undefined || consumer.num_pending < BYPASS_BACKLOG_MIN) continue;
        await this.readSource(source, consumer.delivered.stream_seq, handed);
        if (this.stopped || handed.length >= ROUND_MAX) break;
      }
    } finally {
      // Even when a read failed: what was handed over is settled before another round reads again.
      await Promise.all(handed);
    }
    return handed.length;
  }

  /** Hands over the commands of the source's small tenants stored after `after`, the consumer's delivered sequence. */
  private async readSource(source: CommandSource, after: number, handed: Promise<void>[]): Promise<void> {
    this.ledger.forgetThrough(source.consumer, after);
    const stream = await this.jsm.streams.info(this.options.stream, { subjects_filter: sourceSubjects(source) });
    // An operator's stream that denies deletes: a message read could never be removed.
    if (stream.config.deny_delete) return;
    const tenants = tenantsWithin(stream.state.subjects ?? {}, source, BYPASS_TENANT_MAX);
    await inParallel(tenants, READ_CONCURRENCY, async ({ tenantId }) => {
      let seq = after + 1;
      while (!this.stopped && handed.length < ROUND_MAX) {
        const message = await this.read(tenantSubjects(source, tenantId), seq);
        if (message === null) return;
        seq = message.seq + 1;
        if (this.ledger.resting(message.seq, this.now())) continue;
        handed.push(this.handOver(source, message));
      }
    });
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      let handed = 0;
      try {
        handed = await this.round();
      } catch (error) {
        if (this.now() - this.lastWarnMs >= WARN_EVERY_MS) {
          this.lastWarnMs = this.now();
          this.options.logger.warn(
            { err: error, stream: this.options.stream },
            "backlog bypass round failed; commands wait in their consumer's turn",
          );
        }
      }
      if (handed === 0 && !this.stopped) await this.idle();
    }
  }

  private idle(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, IDLE_MS);
      timer.unref();
      this.wake = done;
    });
  }

  /** The first message at or after `seq` on `subjects`, or null. */
  private read(subjects: string, seq: number): Promise<StoredMsg | null> {
    // MsgRequest's type lacks next_by_subj; the STREAM.MSG.GET API takes it with a start sequence.
    const query: MsgRequest & { next_by_subj: string } = { seq, next_by_subj: subjects };
    return this.jsm.streams.getMessage(this.options.stream, query);
  }

  private async handOver(source: CommandSource, message: StoredMsg): Promise<void> {
    const subject = source.partitioned ? publishedSubject(message.subject) : message.subject;
    const command = new StoredDeliveredCommand(this.options.stream, message, subject, this.ledger.deliveryCount(message.seq));
    this.options.hand(command);
    const settlement = await command.settled;
    if (settlement === undefined || settlement.kind === "nak") {
      this.ledger.left(source.consumer, message.seq, this.now() + (settlement?.delayMs ?? 1_000));
      return;
    }
    try {
      await this.jsm.streams.deleteMessage(this.options.stream, message.seq, false);
      this.ledger.removed(message.seq);
    } catch (error) {
      // Already removed (another instance, or the consumer's ack of a duplicate): done. Otherwise
      // it stays for the consumer's turn, where it is applied again, which changes nothing.
      if (!(error instanceof JetStreamApiError)) {
        this.options.logger.warn(
          { err: error, seq: message.seq },
          "removing a bypassed command failed; its consumer will deliver it again",
        );
      }
      this.ledger.left(source.consumer, message.seq, Number.POSITIVE_INFINITY);
    }
  }

  private now(): number {
    return this.options.nowMs?.() ?? Date.now();
  }
}

/** Runs `work` over `items`, at most `concurrency` at a time. */
async function inParallel<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}
