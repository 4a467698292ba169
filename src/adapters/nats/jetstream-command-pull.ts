import type { ConsumerMessages, JetStreamClient, JsMsg } from "@nats-io/jetstream";
import type { Logger } from "../../app/logger.js";

/** Messages the client asks the server for at once, per consumer. */
const PULL_BATCH = 5_000;
const RETRY_MS = 1_000;

/**
 * One durable consumer's pull: hands every message to `receive`, pulls again when the pull ends by
 * itself, and reports a consumer or stream that went missing.
 */
export class JetStreamCommandPull {
  private messages: ConsumerMessages | undefined;
  private stopped = false;
  /** The pull being (re)started; restarts are serialized through it. */
  private starting: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly js: JetStreamClient,
    private readonly options: {
      readonly stream: string;
      readonly consumer: string;
      readonly logger: Logger;
      readonly receive: (message: JsMsg) => void;
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

  /** Stops pulling; resolves when the pull has closed (messages already handed over stay handed over). */
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
  }

  private async pull(): Promise<void> {
    if (this.stopped || this.messages !== undefined) return;
    try {
      const consumer = await this.js.consumers.get(this.options.stream, this.options.consumer);
      const messages = await consumer.consume({
        max_messages: PULL_BATCH,
        callback: (message) => this.options.receive(message),
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
      this.options.logger.error({ err: error, consumer: this.options.consumer }, "cannot pull commands yet; retrying");
      this.retryLater();
    }
  }

  private pullEnded(messages: ConsumerMessages): void {
    if (this.stopped || this.messages !== messages) return;
    this.messages = undefined;
    this.options.logger.warn({ consumer: this.options.consumer }, "command pull ended; pulling again");
    this.retryLater();
  }

  private retryLater(): void {
    if (this.stopped) return;
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.start();
    }, RETRY_MS);
    this.retryTimer.unref();
  }

  private async watch(messages: ConsumerMessages): Promise<void> {
    const consumer = this.options.consumer;
    try {
      for await (const status of messages.status()) {
        if (status.type === "consumer_not_found" || status.type === "consumer_deleted" || status.type === "stream_not_found") {
          this.options.logger.warn({ status: status.type, consumer }, "command consumer missing; recreating it");
          this.options.onMissingConsumer();
        } else if (status.type === "heartbeats_missed") {
          this.options.logger.warn({ missed: status.count, consumer }, "command consumer missed heartbeats");
        }
      }
    } catch (error) {
      if (!this.stopped) this.options.logger.error({ err: error, consumer }, "command consumer status stream failed");
    }
  }
}
