import type { CommandSender, OutgoingCommand } from "../../app/admin/operator-actions.js";
import type { JetStreamAckTracker } from "./jetstream-ack-tracker.js";
import { commandSubject } from "../../app/subjects.js";

/** Publishes in flight at once: a bulk of 10,000 goes out in windows, not all at once. */
const WINDOW = 256;

const encoder = new TextEncoder();

/**
 * The HTTP API's commands into the commands stream (CONTRACT §14), as a producer would send them:
 * JetStream publishes whose acks are awaited, with the command id as `Nats-Msg-Id` so that a
 * republish within the stream's duplicate window is dropped.
 */
export class JetStreamCommandSender implements CommandSender {
  constructor(
    private readonly acks: JetStreamAckTracker,
    private readonly options: { readonly subjectPrefix: string; readonly commandsStream: string },
  ) {}

  async send(commands: readonly OutgoingCommand[]): Promise<void> {
    const { subjectPrefix, commandsStream } = this.options;
    for (let start = 0; start < commands.length; start += WINDOW) {
      await Promise.all(
        commands
          .slice(start, start + WINDOW)
          .map((c) =>
            this.acks.publish(
              commandSubject(subjectPrefix, c.kind, c.tenantId),
              encoder.encode(JSON.stringify(c.envelope)),
              c.envelope.id,
              commandsStream,
            ),
          ),
      );
    }
  }
}
