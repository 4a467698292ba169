import type { JetStreamClient, JsMsg } from "@nats-io/jetstream";
import type { Logger } from "../../app/logger.js";
import type { TraceContext } from "../../domain/trace-context.js";
import { traceFromHeaders } from "../tracing/nats-trace-headers.js";
import type { CommandSettlement, DeliveredCommand, TimerCommandProcessor } from "../../app/commands/timer-command-processor.js";
import { publishedSubject, type CommandSource } from "./command-partitions.js";
import { JetStreamCommandPull } from "./jetstream-command-pull.js";
import { RoundRobinQueues } from "./round-robin-queues.js";

/** Most command messages applied in one storage transaction (larger: fewer commits per command). */
const COMMAND_BATCH_MAX = 5_000;

/** A received message and the subject it was published on. */
interface Received {
  readonly message: JsMsg;
  readonly subject: string;
}

/**
 * Pulls commands from the durable consumers (the base one and one per partition of the commands
 * stream) and feeds them to the command processor in micro-batches: every message that arrived
 * while the previous batch was being stored goes into the next one, so a quiet stream gets
 * per-message latency and a busy one large transactions. A batch takes the consumers' messages in
 * equal shares, so a flood in one partition delays another partition's commands by two batches at most.
 * Two batches are in flight at a time, and the processor applies them in order, which keeps the
 * commands of one key in delivery order. Settlement
 * happens only here: ack after commit, nak with delay after a transient fault, term for a rejected command.
 */
export class NatsCommandConsumer {
  private pulls: JetStreamCommandPull[] = [];
  private readonly buffer = new RoundRobinQueues<Received>();
  private draining: Promise<void> | undefined;
  private flushScheduled = false;
  /** Wakes a drain that waits for its batch in flight: a message came. */
  private messageArrived: (() => void) | undefined;
  private stopped = false;
  /** The pulls being (re)started; restarts are serialized through it. */
  private starting: Promise<void> | undefined;

  constructor(
    private readonly js: JetStreamClient,
    /** The command use case; only its batch entry point is used (tests pass a stand-in). */
    private readonly processor: Pick<TimerCommandProcessor, "process">,
    private readonly options: {
      readonly stream: string;
      readonly consumer: string;
      /** The consumers to pull, read at every (re)start; default the base consumer alone. */
      readonly sources?: () => readonly CommandSource[];
      readonly logger: Logger;
      readonly onMissingConsumer: () => void;
    },
  ) {}

  /** Whether every pull is running (readiness). */
  get pulling(): boolean {
    return this.pulls.length > 0 && this.pulls.every((pull) => pull.pulling);
  }

  /**
   * Starts pulling. Never throws: a consumer that cannot be reached yet (JetStream still starting,
   * a leader election) is tried again every second until it pulls or is stopped.
   */
  start(): Promise<void> {
    this.starting ??= this.startPulls().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  /**
   * Starts pulling afresh, keeping what is buffered: after a consumer or its stream was recreated
   * (or the stream partitioned) the old pulls would only notice after their requests expired (up to ~45 s).
   */
  async restart(): Promise<void> {
    await this.starting;
    if (this.stopped) return;
    const old = this.pulls;
    this.pulls = [];
    await Promise.all(old.map((pull) => pull.stop()));
    await this.start();
    this.options.logger.info({ pulling: this.pulling, consumers: this.pulls.length }, "command consumer restarted");
  }

  /** Stops pulling, then stores and settles every message already received. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.starting;
    const pulls = this.pulls;
    this.pulls = [];
    await Promise.all(pulls.map((pull) => pull.stop()));
    await this.drain();
  }

  private async startPulls(): Promise<void> {
    if (this.stopped || this.pulls.length > 0) return;
    const sources = this.options.sources?.() ?? [{ consumer: this.options.consumer, partitioned: false }];
    this.pulls = sources.map(
      (source, index) =>
        new JetStreamCommandPull(this.js, {
          stream: this.options.stream,
          consumer: source.consumer,
          logger: this.options.logger,
          receive: (message) => this.receive(index, message, source.partitioned),
          onMissingConsumer: this.options.onMissingConsumer,
        }),
    );
    await Promise.all(this.pulls.map((pull) => pull.start()));
  }

  private receive(source: number, message: JsMsg, partitioned: boolean): void {
    this.buffer.push(source, { message, subject: partitioned ? publishedSubject(message.subject) : message.subject });
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // setImmediate, not a microtask: every message already parsed from the socket joins this batch.
    setImmediate(() => {
      this.flushScheduled = false;
      this.messageArrived?.();
      void this.drain();
    });
  }

  /** Processes buffered messages batch by batch until the buffer is empty; one drain at a time. */
  private drain(): Promise<void> {
    if (this.draining !== undefined) return this.draining;
    // Never start a drain on an empty buffer: its `finally` would run before `draining` is set.
    if (this.buffer.size === 0) return Promise.resolve();
    this.draining = (async () => {
      try {
        // Two batches in flight: the next one is decoded while the store commits the one before
        // (the processor applies them in order). A batch takes what arrived meanwhile.
        let inFlight: Promise<void> | undefined;
        while (this.buffer.size > 0 || inFlight !== undefined) {
          if (this.buffer.size === 0 && inFlight !== undefined) {
            // The batch in flight settles, or a message arrives and becomes the next batch.
            const arrived = new Promise<false>((resolve) => (this.messageArrived = () => resolve(false)));
            const settled = await Promise.race([inFlight.then(() => true), arrived]);
            this.messageArrived = undefined;
            if (settled) inFlight = undefined;
            continue;
          }
          const current = this.processBatch(this.buffer.take(COMMAND_BATCH_MAX));
          await inFlight;
          inFlight = current;
          // A store may work on this thread: let HTTP probes and the socket breathe between batches.
          await new Promise((resolve) => setImmediate(resolve));
        }
      } finally {
        this.draining = undefined;
      }
    })();
    return this.draining;
  }

  private async processBatch(batch: readonly Received[]): Promise<void> {
    let settlements: CommandSettlement[];
    try {
      settlements = await this.processor.process(batch.map(({ message, subject }) => new JetStreamDeliveredCommand(message, subject)));
    } catch (error) {
      // The processor turns faults into settlements; this is a last resort so the consumer lives on.
      this.options.logger.error({ err: error, messages: batch.length }, "command batch failed; it will be redelivered");
      settlements = batch.map(() => ({ kind: "nak", delayMs: 1_000 }));
    }
    try {
      batch.forEach(({ message }, i) => settle(message, settlements[i]));
    } catch (error) {
      // A connection closed under us: the broker redelivers what was not settled.
      this.options.logger.warn({ err: error, messages: batch.length }, "settling a command batch failed");
    }
  }
}

/**
 * A command message as the processor sees it. The delivery info is parsed from the reply subject
 * only when a field needs it (bare payloads, rejections, retries); prototype getters keep the
 * per-message object cheap.
 */
class JetStreamDeliveredCommand implements DeliveredCommand {
  readonly subject: string;
  readonly body: Uint8Array;

  constructor(
    private readonly message: JsMsg,
    /** As published: a partitioned stream stores it with the partition appended. */
    subject: string,
  ) {
    this.subject = subject;
    this.body = message.data;
  }

  get brokerTimestampMs(): number {
    return Math.floor(this.message.info.timestampNanos / 1_000_000);
  }

  /** Stream, sequence and the broker's timestamp: unique even after the stream is recreated. */
  get sourceId(): string {
    const info = this.message.info;
    return `${info.stream}:${info.streamSequence}:${Math.floor(info.timestampNanos / 1_000_000)}`;
  }

  get deliveryCount(): number {
    return this.message.info.deliveryCount;
  }

  /** The W3C trace context of the message's headers (CONTRACT §13); read once, by the decoder. */
  get trace(): TraceContext | undefined {
    return traceFromHeaders(this.message);
  }
}

function settle(message: JsMsg, settlement: CommandSettlement | undefined): void {
  if (settlement === undefined || settlement.kind === "nak") message.nak(settlement?.delayMs ?? 1_000);
  else if (settlement.kind === "ack") message.ack();
  // A bare term: nats-server before 2.10.4 does not understand a term with a reason and would leave
  // the message pending, to be redelivered and rejected again after every ack_wait.
  else message.term();
}
