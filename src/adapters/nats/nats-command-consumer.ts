import type { ConsumerMessages, JetStreamClient, JsMsg } from "@nats-io/jetstream";
import type { Logger } from "../../app/logger.js";
import type { TraceContext } from "../../domain/trace-context.js";
import { traceFromHeaders } from "../tracing/nats-trace-headers.js";
import type { CommandSettlement, DeliveredCommand, TimerCommandProcessor } from "../../app/commands/timer-command-processor.js";

/** Most command messages applied in one storage transaction (larger: fewer commits per command). */
const COMMAND_BATCH_MAX = 5_000;
/** Messages the client asks the server for at once. */
const PULL_BATCH = 5_000;

/**
 * Pulls commands from the durable consumer and feeds them to the command processor in micro-batches:
 * every message that arrived while the previous batch was being stored goes into the next one, so a
 * quiet stream gets per-message latency and a busy one large transactions. Batches run one at a time,
 * which keeps the commands of one key in delivery order. Settlement happens only here: ack after
 * commit, nak with delay after a transient fault, term for a rejected command.
 */
export class NatsCommandConsumer {
  private messages: ConsumerMessages | undefined;
  private buffer: JsMsg[] = [];
  private draining: Promise<void> | undefined;
  private flushScheduled = false;
  private stopped = false;
  /** The pull being (re)started; restarts are serialized through it. */
  private starting: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly js: JetStreamClient,
    /** The command use case; only its batch entry point is used (tests pass a stand-in). */
    private readonly processor: Pick<TimerCommandProcessor, "process">,
    private readonly options: {
      readonly stream: string;
      readonly consumer: string;
      readonly logger: Logger;
      readonly onMissingConsumer: () => void;
    },
  ) {}

  /** Whether a pull is running (readiness). */
  get pulling(): boolean {
    return this.messages !== undefined;
  }

  /**
   * Starts pulling. Never throws: when the consumer cannot be reached yet (JetStream still starting,
   * a leader election), it logs and tries again every second until it pulls or is stopped.
   */
  start(): Promise<void> {
    this.starting ??= this.pull().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  /**
   * Starts pulling afresh, keeping what is buffered: after the consumer or its stream was recreated
   * the old pull would only notice after its request expired (up to ~45 s).
   */
  async restart(): Promise<void> {
    await this.starting;
    if (this.stopped) return;
    const old = this.messages;
    this.messages = undefined;
    old?.stop();
    await this.start();
    this.options.logger.info({ pulling: this.pulling }, "command consumer restarted");
  }

  /** Stops pulling, then stores and settles every message already received. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    await this.starting;
    const messages = this.messages;
    this.messages = undefined;
    if (messages !== undefined) {
      messages.stop();
      await messages.closed().catch(() => undefined);
    }
    await this.drain();
  }

  private async pull(): Promise<void> {
    if (this.stopped || this.messages !== undefined) return;
    try {
      const consumer = await this.js.consumers.get(this.options.stream, this.options.consumer);
      const messages = await consumer.consume({
        max_messages: PULL_BATCH,
        callback: (message) => this.receive(message),
      });
      if (this.stopped) {
        messages.stop();
        return;
      }
      this.messages = messages;
      void this.watch(messages);
      // consume() can end by itself (a permission error, a closed connection): pull again.
      void messages.closed().then(
        () => this.pullEnded(messages),
        () => this.pullEnded(messages),
      );
    } catch (error) {
      this.options.logger.error({ err: error }, "cannot pull commands yet; retrying");
      this.retryLater();
    }
  }

  private pullEnded(messages: ConsumerMessages): void {
    if (this.stopped || this.messages !== messages) return;
    this.messages = undefined;
    this.options.logger.warn({}, "command pull ended; pulling again");
    this.retryLater();
  }

  private retryLater(): void {
    if (this.stopped) return;
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.start();
    }, 1_000);
    this.retryTimer.unref();
  }

  private receive(message: JsMsg): void {
    this.buffer.push(message);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // setImmediate, not a microtask: every message already parsed from the socket joins this batch.
    setImmediate(() => {
      this.flushScheduled = false;
      void this.drain();
    });
  }

  /** Processes buffered messages batch by batch until the buffer is empty; one drain at a time. */
  private drain(): Promise<void> {
    if (this.draining !== undefined) return this.draining;
    // Never start a drain on an empty buffer: its `finally` would run before `draining` is set.
    if (this.buffer.length === 0) return Promise.resolve();
    this.draining = (async () => {
      try {
        while (this.buffer.length > 0) {
          const batch = this.buffer.splice(0, COMMAND_BATCH_MAX);
          await this.processBatch(batch);
          // Storing a batch is synchronous: let HTTP probes and the socket breathe between batches.
          await new Promise((resolve) => setImmediate(resolve));
        }
      } finally {
        this.draining = undefined;
      }
    })();
    return this.draining;
  }

  private async processBatch(batch: JsMsg[]): Promise<void> {
    let settlements: CommandSettlement[];
    try {
      settlements = await this.processor.process(batch.map((message) => new JetStreamDeliveredCommand(message)));
    } catch (error) {
      // The processor turns faults into settlements; this is a last resort so the consumer lives on.
      this.options.logger.error({ err: error, messages: batch.length }, "command batch failed; it will be redelivered");
      settlements = batch.map(() => ({ kind: "nak", delayMs: 1_000 }));
    }
    batch.forEach((message, i) => settle(message, settlements[i]));
  }

  private async watch(messages: ConsumerMessages): Promise<void> {
    try {
      for await (const status of messages.status()) {
        if (status.type === "consumer_not_found" || status.type === "consumer_deleted" || status.type === "stream_not_found") {
          this.options.logger.warn({ status: status.type }, "command consumer missing; recreating it");
          this.options.onMissingConsumer();
        } else if (status.type === "heartbeats_missed") {
          this.options.logger.warn({ missed: status.count }, "command consumer missed heartbeats");
        }
      }
    } catch (error) {
      if (!this.stopped) this.options.logger.error({ err: error }, "command consumer status stream failed");
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

  constructor(private readonly message: JsMsg) {
    this.subject = message.subject;
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
    return traceFromHeaders(this.message.headers);
  }
}

function settle(message: JsMsg, settlement: CommandSettlement | undefined): void {
  if (settlement === undefined || settlement.kind === "nak") message.nak(settlement?.delayMs ?? 1_000);
  else if (settlement.kind === "ack") message.ack();
  // A bare term: nats-server before 2.10.4 does not understand a term with a reason and would leave
  // the message pending, to be redelivered and rejected again after every ack_wait.
  else message.term();
}
