import type { StoredMsg } from "@nats-io/jetstream";
import type { CommandSettlement } from "../../app/commands/timer-command-processor.js";
import type { TraceContext } from "../../domain/trace-context.js";
import { traceFromHeaders } from "../tracing/nats-trace-headers.js";
import { asksForConfirmation } from "./confirm-header.js";
import type { ReceivedCommand } from "./received-command.js";

/**
 * A command message the backlog bypass read from the stream by sequence, as the processor sees it:
 * the same subject, body, timestamp, source id and trace as when a consumer delivers it. Its
 * settlement is handed back to the bypass (`settled`), which removes the message from the stream
 * after an ack or a term; a message a consumer delivers instead never reaches the bypass.
 */
export class StoredDeliveredCommand implements ReceivedCommand {
  readonly subject: string;
  readonly body: Uint8Array;
  readonly brokerTimestampMs: number;
  readonly sourceId: string;
  readonly settled: Promise<CommandSettlement | undefined>;
  private resolve!: (settlement: CommandSettlement | undefined) => void;

  constructor(
    stream: string,
    private readonly message: StoredMsg,
    /** As published: a partitioned stream stores it with the partition token. */
    subject: string,
    /** 1 + the times the bypass handed it over before without removing it (a nak). */
    readonly deliveryCount: number,
  ) {
    this.subject = subject;
    this.body = message.data;
    this.brokerTimestampMs = message.time.getTime();
    // As JetStreamDeliveredCommand makes it: a rejection's id is the same whichever lane read it.
    this.sourceId = `${stream}:${message.seq}:${this.brokerTimestampMs}`;
    this.settled = new Promise((resolve) => (this.resolve = resolve));
  }

  get trace(): TraceContext | undefined {
    return traceFromHeaders(() => this.message.header);
  }

  /** `Timer-Confirm: 1` (CONTRACT §19); read by the processor only once the command is decided. */
  get confirm(): boolean {
    return asksForConfirmation(() => this.message.header);
  }

  settle(settlement: CommandSettlement | undefined): void {
    this.resolve(settlement);
  }
}
