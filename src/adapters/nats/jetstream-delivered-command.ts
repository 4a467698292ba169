import type { JsMsg } from "@nats-io/jetstream";
import type { CommandSettlement } from "../../app/commands/timer-command-processor.js";
import type { TraceContext } from "../../domain/trace-context.js";
import { traceFromHeaders } from "../tracing/nats-trace-headers.js";
import { asksForConfirmation } from "./confirm-header.js";
import type { ReceivedCommand } from "./received-command.js";

/**
 * A command message a durable consumer delivered, as the processor sees it. The delivery info is
 * parsed from the reply subject only when a field needs it (bare payloads, rejections, retries);
 * prototype getters keep the per-message object cheap.
 */
export class JetStreamDeliveredCommand implements ReceivedCommand {
  readonly subject: string;
  readonly body: Uint8Array;

  constructor(
    private readonly message: JsMsg,
    /** As published: a partitioned stream stores it with the partition token. */
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
    return traceFromHeaders(() => this.message.headers);
  }

  /** `Timer-Confirm: 1` (CONTRACT §19); read by the processor only once the command is decided. */
  get confirm(): boolean {
    return asksForConfirmation(() => this.message.headers);
  }

  settle(settlement: CommandSettlement | undefined): void {
    const message = this.message;
    if (settlement === undefined || settlement.kind === "nak") message.nak(settlement?.delayMs ?? 1_000);
    else if (settlement.kind === "ack") message.ack();
    // A bare term: nats-server before 2.10.4 does not understand a term with a reason and would leave
    // the message pending, to be redelivered and rejected again after every ack_wait.
    else message.term();
  }
}
