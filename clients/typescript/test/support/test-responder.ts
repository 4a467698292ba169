import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type Msg, type NatsConnection } from "@nats-io/transport-node";

/** A command as the responder saw it on `timer.commands.>`. */
export interface SeenCommand {
  readonly subject: string;
  readonly confirm: string | undefined;
  readonly envelope: { id: string; type: string; tenantId: string; payload: Record<string, unknown> };
}

/**
 * Stands in for the service's side of CONTRACT §19 while it is built elsewhere: makes the commands
 * stream, reads every command like the service does, answers those with `Timer-Confirm: 1` as
 * `answer` says on `timer.outcomes.{tenantId}`, and answers `get` queries with `getReply`.
 */
export class TestResponder {
  readonly seen: SeenCommand[] = [];
  readonly getRequests: Record<string, unknown>[] = [];
  answer: (command: SeenCommand) => Record<string, unknown> | undefined = () => undefined;
  getReply: (request: Record<string, unknown>) => Record<string, unknown> = () => ({ timer: null });
  private readonly waiters = new Map<string, (command: SeenCommand) => void>();

  private constructor(readonly nc: NatsConnection) {}

  static async start(url: string): Promise<TestResponder> {
    const responder = new TestResponder(await connect({ servers: url }));
    await (await jetstreamManager(responder.nc)).streams.add({ name: "TIMER_COMMANDS", subjects: ["timer.commands.>"] });
    responder.nc.subscribe("timer.commands.>", { callback: (_e, message) => responder.onCommand(message) });
    responder.nc.subscribe("timer.query.get.*", {
      callback: (_e, message) => {
        const request = message.json<Record<string, unknown>>();
        responder.getRequests.push(request);
        message.respond(JSON.stringify(responder.getReply(request)));
      },
    });
    await responder.nc.flush();
    return responder;
  }

  /** The command with envelope id `id` (a core subscriber may see it after the stream's ack). */
  command(id: string): Promise<SeenCommand> {
    const found = this.seen.find((s) => s.envelope.id === id);
    return found !== undefined ? Promise.resolve(found) : new Promise((resolve) => this.waiters.set(id, resolve));
  }

  /** How many commands the stream holds (a command the CLI sent is stored before it exits). */
  async stored(): Promise<number> {
    return (await (await jetstreamManager(this.nc)).streams.info("TIMER_COMMANDS")).state.messages;
  }

  close(): Promise<void> {
    return this.nc.close();
  }

  private onCommand(message: Msg): void {
    const command: SeenCommand = {
      subject: message.subject,
      confirm: message.headers?.get("Timer-Confirm") || undefined,
      envelope: message.json(),
    };
    this.seen.push(command);
    this.waiters.get(command.envelope.id)?.(command);
    if (command.confirm !== "1") return;
    const outcome = this.answer(command);
    if (outcome !== undefined) this.nc.publish(`timer.outcomes.${command.envelope.tenantId}`, JSON.stringify(outcome));
  }
}

/** The wire form of CONTRACT §19. */
export function outcomeOf(command: SeenCommand, outcome: "applied" | "ignored" | "rejected", extra: Record<string, unknown> = {}) {
  return {
    type: "CommandOutcome",
    commandId: command.envelope.id,
    serviceCallId: command.envelope.payload.serviceCallId,
    outcome,
    ...extra,
  };
}
