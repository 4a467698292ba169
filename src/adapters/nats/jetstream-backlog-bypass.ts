import { JetStreamApiError, type ConsumerInfo, type JetStreamManager, type MsgRequest, type StoredMsg } from "@nats-io/jetstream";
import type { Logger } from "../../app/logger.js";
import { PollingLoop } from "../../app/polling-loop.js";
import { tenantsWithin } from "./backlog-tenants.js";
import { BypassLedger } from "./bypass-ledger.js";
import { publishedSubject, sourceSubjects, tenantSubjects, type CommandSource } from "./command-partitions.js";
import { StoredDeliveredCommand } from "./stored-delivered-command.js";

/** A source's consumer with at least this many commands not yet delivered is flooded: its small tenants are read directly. */
export const BYPASS_BACKLOG_MIN = 2_000;
/** A tenant with more commands stored in a flooded source than this is a flooder too and stays in the consumer's lane. */
const BYPASS_TENANT_MAX = 1_000;
/** Commands the bypass holds at once, handed over and not yet settled and removed (its memory bound). */
const MAX_IN_FLIGHT = 2_000;
/** Tenants read at the same time (each is a chain of one request per message). */
const READ_CONCURRENCY = 4;
/** The pause between rounds: what a tenant's command waits at most before a round looks for it. */
const IDLE_MS = 100;
/** Read positions kept at most (one per small tenant of a flooded source); beyond, they are dropped. */
const MAX_CURSORS = 10_000;
/** A failing round (permissions, a leader election) is logged at most this often. */
const WARN_EVERY_MS = 60_000;

/**
 * The lane beside a flooded consumer (ADR-0010). A durable consumer delivers in stream order, so a
 * tenant whose commands share a partition with a flooder's 200,000 would wait for all of them. When
 * a source's consumer has at least BYPASS_BACKLOG_MIN commands not yet delivered, a round reads the
 * per-subject counts of the source, and for each tenant with at most BYPASS_TENANT_MAX stored, reads
 * its commands from the stream by subject (`next_by_subj`), after the consumer's delivered sequence
 * (what the consumer handed over stays its own), and hands them to the same batches as the
 * consumers'. After the processor's decision: ack or term removes the message from the stream (the
 * work-queue equivalent of an ack), a nak leaves it there for its delay (ledger).
 *
 * Rounds run every IDLE_MS and do not wait for what earlier rounds handed over: a message in flight
 * is not read again (nor are those before a tenant's read position), and at most MAX_IN_FLIGHT are
 * in flight at once.
 *
 * Duplicates are harmless and rare: the consumer may deliver a message between its info and the
 * read (one at the edge of its delivered sequence), and several instances may read the same one; a
 * command applied twice changes nothing the second time (CONTRACT §3.2), a rejection's event has
 * the same id, and removing a message already removed fails quietly.
 */
export class JetStreamBacklogBypass extends PollingLoop {
  private readonly ledger = new BypassLedger();
  /** Handed over and not yet settled and removed, by stream sequence. */
  private readonly inFlight = new Map<number, Promise<void>>();
  /** Per source and tenant: the last sequence read that no later round needs to read again. */
  private readonly cursors = new Map<string, number>();
  /** When the stream was created: a recreated stream starts its sequences over, so the positions go. */
  private streamCreated: string | undefined;
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
  ) {
    super({ now: options.nowMs ?? Date.now }, IDLE_MS);
  }

  /** Stops reading; resolves once what was handed over is settled (the service's drain settles it). */
  override async stop(): Promise<void> {
    await super.stop();
    await this.settled();
  }

  /** Resolves once every command handed over so far is settled (and removed, when acked or termed). */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all(this.inFlight.values());
  }

  /** One round: hands over what the flooded sources' small tenants have queued; returns how many. */
  async round(): Promise<number> {
    const sources = this.options.sources();
    if (sources.length === 0) return 0;
    const consumers = new Map<string, ConsumerInfo>();
    for await (const info of this.jsm.consumers.list(this.options.stream)) consumers.set(info.name, info);
    let handed = 0;
    for (const source of sources) {
      const consumer = consumers.get(source.consumer);
      if (consumer === undefined || consumer.num_pending < BYPASS_BACKLOG_MIN) continue;
      handed += await this.readSource(source, consumer.delivered.stream_seq);
      if (this.stopped || this.inFlight.size >= MAX_IN_FLIGHT) break;
    }
    return handed;
  }

  /** Hands over the commands of the source's small tenants stored after `after`, the consumer's delivered sequence. */
  private async readSource(source: CommandSource, after: number): Promise<number> {
    this.ledger.forgetThrough(source.consumer, after);
    const stream = await this.jsm.streams.info(this.options.stream, { subjects_filter: sourceSubjects(source) });
    // An operator's stream that denies deletes: a message read could never be removed.
    if (stream.config.deny_delete) return 0;
    if (stream.created !== this.streamCreated) {
      this.streamCreated = stream.created;
      this.cursors.clear();
      this.ledger.clear();
    }
    const tenants = tenantsWithin(stream.state.subjects ?? {}, source, BYPASS_TENANT_MAX);
    if (this.cursors.size > MAX_CURSORS) this.cursors.clear();
    let handed = 0;
    await inParallel(tenants, READ_CONCURRENCY, async ({ tenantId }) => {
      const read = await this.readTenant(source, tenantId, after);
      handed += read;
    });
    return handed;
  }

  /**
   * Hands over one tenant's commands in stream order, from its read position (or from the first of
   * its nak'ed messages whose delay is over). The position moves past every message read: one in
   * flight, resting after a nak or left to the consumer needs no reading before the ledger says so.
   */
  private async readTenant(source: CommandSource, tenantId: string, after: number): Promise<number> {
    const key = `${source.consumer} ${tenantId}`;
    const now = this.now();
    let seq = Math.max(after + 1, Math.min((this.cursors.get(key) ?? 0) + 1, this.ledger.firstDue(key, now) ?? Infinity));
    let handed = 0;
    while (!this.stopped && this.inFlight.size < MAX_IN_FLIGHT) {
      const message = await this.read(tenantSubjects(source, tenantId), seq);
      if (message === null) break;
      seq = message.seq + 1;
      this.cursors.set(key, Math.max(message.seq, this.cursors.get(key) ?? 0));
      if (this.inFlight.has(message.seq) || this.ledger.resting(message.seq, now)) continue;
      this.inFlight.set(
        message.seq,
        this.handOver(source, key, message).finally(() => this.inFlight.delete(message.seq)),
      );
      handed++;
    }
    return handed;
  }

  /** One round, then the pause before the next; a failing round is logged (at most every WARN_EVERY_MS). */
  protected async cycle(): Promise<number> {
    try {
      await this.round();
    } catch (error) {
      if (this.now() - this.lastWarnMs >= WARN_EVERY_MS) {
        this.lastWarnMs = this.now();
        this.options.logger.warn(
          { err: error, stream: this.options.stream },
          "backlog bypass round failed; commands wait in their consumer's turn",
        );
      }
    }
    return IDLE_MS;
  }

  /** The first message at or after `seq` on `subjects`, or null. */
  private read(subjects: string, seq: number): Promise<StoredMsg | null> {
    // MsgRequest's type lacks next_by_subj; the STREAM.MSG.GET API takes it with a start sequence.
    const query: MsgRequest & { next_by_subj: string } = { seq, next_by_subj: subjects };
    return this.jsm.streams.getMessage(this.options.stream, query);
  }

  private async handOver(source: CommandSource, tenantKey: string, message: StoredMsg): Promise<void> {
    const subject = source.partitioned ? publishedSubject(message.subject) : message.subject;
    const command = new StoredDeliveredCommand(this.options.stream, message, subject, this.ledger.deliveryCount(message.seq));
    this.options.hand(command);
    const settlement = await command.settled;
    if (settlement === undefined || settlement.kind === "nak") {
      this.ledger.left(source.consumer, tenantKey, message.seq, this.now() + (settlement?.delayMs ?? 1_000));
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
      this.ledger.left(source.consumer, tenantKey, message.seq, Number.POSITIVE_INFINITY);
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
