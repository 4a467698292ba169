import type { JetStreamClient, JsMsg } from "@nats-io/jetstream";
import type { Logger } from "../../app/logger.js";
import type { CommandSettlement, TimerCommandProcessor } from "../../app/commands/timer-command-processor.js";
import { publishedSubject, tenantKey, type CommandSource } from "./command-partitions.js";
import { JetStreamBacklogBypass } from "./jetstream-backlog-bypass.js";
import { JetStreamCommandPull } from "./jetstream-command-pull.js";
import { JetStreamDeliveredCommand } from "./jetstream-delivered-command.js";
import type { ReceivedCommand } from "./received-command.js";
import { RoundRobinQueues } from "./round-robin-queues.js";

/** Most command messages applied in one storage transaction (larger: fewer commits per command). */
const COMMAND_BATCH_MAX = 5_000;

/**
 * Pulls commands from the durable consumers (the base one and one per partition of the commands
 * stream) and feeds them to the command processor in micro-batches: every message that arrived
 * while the previous batch was being stored goes into the next one, so a quiet stream gets
 * per-message latency and a busy one large transactions. A batch takes the buffered messages of
 * every tenant in equal shares, so a flood delays another tenant's commands already received by two
 * batches at most; the backlog bypass (JetStreamBacklogBypass) receives the commands of the small
 * tenants of a flooded partition that its consumer has not delivered yet. Two batches are in flight
 * at a time, and the processor applies them in order, which keeps the commands of one key in
 * delivery order. Settlement happens only here: ack after commit, nak with delay after a transient
 * fault, term for a rejected command (for the bypass's messages: removal, or left in the stream).
 */
export class NatsCommandConsumer {
  private pulls: JetStreamCommandPull[] = [];
  private readonly buffer = new RoundRobinQueues<ReceivedCommand>();
  private bypass: JetStreamBacklogBypass | undefined;
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
      /** Read the small tenants of a flooded partition beside its consumer (default true). */
      readonly backlogBypass?: boolean;
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
    // The bypass's stop waits for what it handed over to be settled, which the drain does meanwhile.
    await Promise.all([...pulls.map((pull) => pull.stop()), this.bypass?.stop()]);
    await this.drain();
  }

  private async startPulls(): Promise<void> {
    if (this.stopped || this.pulls.length > 0) return;
    const sources = this.options.sources?.() ?? [{ consumer: this.options.consumer, partitioned: false }];
    this.pulls = sources.map(
      (source) =>
        new JetStreamCommandPull(this.js, {
          stream: this.options.stream,
          consumer: source.consumer,
          logger: this.options.logger,
          receive: (message) => this.receive(message, source.partitioned),
          onMissingConsumer: this.options.onMissingConsumer,
        }),
    );
    await Promise.all(this.pulls.map((pull) => pull.start()));
    if (this.options.backlogBypass !== false && this.bypass === undefined && !this.stopped) {
      this.bypass = new JetStreamBacklogBypass(await this.js.jetstreamManager(false), {
        stream: this.options.stream,
        sources: () => this.options.sources?.() ?? [],
        hand: (command) => this.buffered(command),
        logger: this.options.logger,
      });
      this.bypass.start();
    }
  }

  private receive(message: JsMsg, partitioned: boolean): void {
    this.buffered(new JetStreamDeliveredCommand(message, partitioned ? publishedSubject(message.subject) : message.subject));
  }

  /** Into the buffer, in its tenant's queue; the batch that takes it is scheduled. */
  private buffered(command: ReceivedCommand): void {
    this.buffer.push(tenantKey(command.subject), command);
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

  private async processBatch(batch: readonly ReceivedCommand[]): Promise<void> {
    let settlements: CommandSettlement[];
    try {
      settlements = await this.processor.process(batch);
    } catch (error) {
      // The processor turns faults into settlements; this is a last resort so the consumer lives on.
      this.options.logger.error({ err: error, messages: batch.length }, "command batch failed; it will be redelivered");
      settlements = batch.map(() => ({ kind: "nak", delayMs: 1_000 }));
    }
    // Each on its own: a bypassed command's settlement must come back even when an ack failed.
    let failed: unknown;
    batch.forEach((command, i) => {
      try {
        command.settle(settlements[i]);
      } catch (error) {
        failed ??= error;
      }
    });
    // A connection closed under us: the broker redelivers what was not settled.
    if (failed !== undefined) this.options.logger.warn({ err: failed, messages: batch.length }, "settling a command batch failed");
  }
}
