import type { NatsConnection } from "@nats-io/transport-node";
import { formatInstant } from "../../domain/due-time.js";
import type { Logger } from "../../app/logger.js";
import type { CommandOutcome, CommandOutcomes } from "../../app/commands/command-outcomes.js";
import { outcomeSubject } from "../../app/subjects.js";

/** The `CommandOutcome` JSON of CONTRACT §19. */
export function commandOutcomeJson(outcome: CommandOutcome): string {
  const { timer } = outcome;
  return JSON.stringify({
    type: "CommandOutcome",
    commandId: outcome.commandId,
    ...(outcome.serviceCallId === undefined ? {} : { serviceCallId: outcome.serviceCallId }),
    outcome: outcome.outcome,
    ...(outcome.code === undefined ? {} : { code: outcome.code }),
    reason: outcome.reason,
    ...(timer === undefined
      ? {}
      : {
          timer: {
            state: timer.state,
            dueAt: timer.dueAtMs === null ? null : formatInstant(timer.dueAtMs),
            generation: timer.generation,
            ...(timer.occurrence === undefined ? {} : { occurrence: timer.occurrence }),
          },
        }),
  });
}

/**
 * Publishes outcomes with core NATS on `{prefix}.outcomes.{tenantId}`: in no stream, received only
 * by whoever subscribes at the time (the sender, waiting for it). While the connection is away the
 * client buffers the publish; a closed connection drops it, with a warning.
 */
export class NatsCommandOutcomes implements CommandOutcomes {
  constructor(
    private readonly connection: NatsConnection,
    private readonly options: { readonly subjectPrefix: string; readonly logger: Logger },
  ) {}

  send(outcome: CommandOutcome): void {
    const subject = outcomeSubject(this.options.subjectPrefix, outcome.tenantId);
    try {
      this.connection.publish(subject, commandOutcomeJson(outcome));
    } catch (error) {
      this.options.logger.warn({ err: error, subject, commandId: outcome.commandId }, "publishing CommandOutcome failed");
    }
  }
}
