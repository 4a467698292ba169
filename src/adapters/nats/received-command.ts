import type { CommandSettlement, DeliveredCommand } from "../../app/commands/timer-command-processor.js";

/**
 * A command message in the service's buffer, from either lane: pulled from a durable consumer, or
 * read from the stream by the backlog bypass. `settle` carries out the processor's decision once
 * the batch is stored (ack after commit); `undefined` means no decision (the batch failed).
 */
export interface ReceivedCommand extends DeliveredCommand {
  settle(settlement: CommandSettlement | undefined): void;
}
