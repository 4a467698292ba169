import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { TimerClientError } from "./timer-client-error.js";
import type { CommandOutcome } from "./types.js";

const decoder = new TextDecoder();

interface Waiter {
  resolve(outcome: CommandOutcome): void;
  reject(error: Error): void;
}

function isOutcome(value: unknown): value is CommandOutcome {
  const o = value as Partial<CommandOutcome> | null;
  return (
    typeof o === "object" &&
    o !== null &&
    o.type === "CommandOutcome" &&
    typeof o.commandId === "string" &&
    (o.outcome === "applied" || o.outcome === "ignored" || o.outcome === "rejected")
  );
}

/**
 * The tenant's `CommandOutcome` messages (CONTRACT §19), read by one subscription per client, made
 * on the first confirmed command and matched to waiting commands by commandId. Outcomes nobody
 * waits for (another client's, or one that came after its timeout) are dropped.
 */
export class CommandOutcomes {
  private readonly waiters = new Map<string, Waiter>();
  private subscribed: Promise<Subscription> | undefined;

  constructor(
    private readonly connection: NatsConnection,
    private readonly subject: string,
  ) {}

  /** Subscribes when not yet subscribed; resolves once the server has the subscription. */
  ready(): Promise<unknown> {
    this.subscribed ??= this.subscribe();
    return this.subscribed;
  }

  /** Waits for the outcome of `commandId`; `ready()` must have resolved before the command is published. */
  expect(commandId: string): { outcome: Promise<CommandOutcome>; forget(): void } {
    const outcome = new Promise<CommandOutcome>((resolve, reject) => this.waiters.set(commandId, { resolve, reject }));
    return { outcome, forget: () => this.waiters.delete(commandId) };
  }

  /** Ends the subscription; every command still waiting rejects as closed. */
  close(): void {
    for (const waiter of this.waiters.values()) {
      waiter.reject(new TimerClientError("CLOSED", "the client was closed before the command's outcome came"));
    }
    this.waiters.clear();
    void this.subscribed?.then((s) => s.unsubscribe()).catch(() => undefined);
  }

  private async subscribe(): Promise<Subscription> {
    const subscription = this.connection.subscribe(this.subject, {
      callback: (error, message) => {
        if (error !== null) return;
        let body: unknown;
        try {
          body = JSON.parse(decoder.decode(message.data));
        } catch {
          return;
        }
        if (!isOutcome(body)) return;
        const waiter = this.waiters.get(body.commandId);
        if (waiter === undefined) return;
        this.waiters.delete(body.commandId);
        waiter.resolve(body);
      },
    });
    try {
      // The server has the subscription once a flush returns: an outcome cannot pass it by.
      await this.connection.flush();
    } catch (error) {
      this.subscribed = undefined;
      subscription.unsubscribe();
      throw error;
    }
    return subscription;
  }
}
