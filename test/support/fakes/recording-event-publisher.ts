import type { CommandRejected, DueTimeMissed, DueTimeReached, TimerEventPublisher } from "../../../src/app/timer-event-publisher.js";

/** The error a `RecordingEventPublisher` fails a publish with. */
export class PublishRefusedError extends Error {
  override readonly name = "PublishRefusedError";
}

type EventKind = "due" | "missed" | "rejected";
type AnyEvent = DueTimeReached | DueTimeMissed | CommandRejected;

interface PendingPublish {
  readonly kind: EventKind;
  readonly event: AnyEvent;
  readonly settle: () => void;
}

/**
 * A `TimerEventPublisher` that records what was published (acked) and can misbehave on demand:
 * fail the next N publishes, fail every publish for a `serviceCallId`, or hold publishes pending
 * until the test releases them (to land a command between a poll's publish and its mark).
 */
export class RecordingEventPublisher implements TimerEventPublisher {
  /** `DueTimeReached` events the "broker" acked, in ack order. */
  readonly dueTimeReached: DueTimeReached[] = [];
  /** `CommandRejected` events the "broker" acked, in ack order. */
  readonly commandRejected: CommandRejected[] = [];
  /** `DueTimeMissed` events the "broker" acked, in ack order. */
  readonly dueTimeMissed: DueTimeMissed[] = [];
  /** Every publish attempt, acked or not, in call order. */
  readonly attempts: { kind: EventKind; event: AnyEvent; failed: boolean }[] = [];

  private failuresLeft: { count: number; kind: EventKind | "any" } = { count: 0, kind: "any" };
  private readonly failingServiceCallIds = new Set<string>();
  private holding = false;
  private readonly pending: PendingPublish[] = [];
  private pendingWaiters: { count: number; resolve: () => void }[] = [];

  /** The next `count` publishes (of `kind`, or of any kind) reject. */
  failNext(count: number, kind: EventKind | "any" = "any"): void {
    this.failuresLeft = { count, kind };
  }

  /** Every publish of an event for this serviceCallId rejects, until `recover`. */
  failFor(serviceCallId: string): void {
    this.failingServiceCallIds.add(serviceCallId);
  }

  recover(serviceCallId?: string): void {
    if (serviceCallId === undefined) this.failingServiceCallIds.clear();
    else this.failingServiceCallIds.delete(serviceCallId);
    this.failuresLeft = { count: 0, kind: "any" };
  }

  /** From now on publishes stay pending until `release`. */
  hold(): void {
    this.holding = true;
  }

  /** Settles every pending publish (in call order) and stops holding. */
  release(): void {
    this.holding = false;
    for (const publish of this.pending.splice(0)) publish.settle();
  }

  get pendingCount(): number {
    return this.pending.length;
  }

  /** Resolves once at least `count` publishes are held pending. */
  whenPending(count: number): Promise<void> {
    if (this.pending.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.pendingWaiters.push({ count, resolve }));
  }

  publishDueTimeReached(event: DueTimeReached): Promise<void> {
    return this.publish("due", event);
  }

  publishDueTimeMissed(event: DueTimeMissed): Promise<void> {
    return this.publish("missed", event);
  }

  publishCommandRejected(event: CommandRejected): Promise<void> {
    return this.publish("rejected", event);
  }

  private publish(kind: EventKind, event: AnyEvent): Promise<void> {
    const failed = this.shouldFail(kind, event);
    return new Promise<void>((resolve, reject) => {
      const settle = () => {
        this.attempts.push({ kind, event, failed });
        if (failed) {
          reject(new PublishRefusedError(`publish of ${kind} event refused by the test`));
          return;
        }
        if (kind === "due") this.dueTimeReached.push(event as DueTimeReached);
        else if (kind === "missed") this.dueTimeMissed.push(event as DueTimeMissed);
        else this.commandRejected.push(event as CommandRejected);
        resolve();
      };
      if (!this.holding) {
        settle();
        return;
      }
      this.pending.push({ kind, event, settle });
      this.pendingWaiters = this.pendingWaiters.filter((waiter) => {
        if (this.pending.length < waiter.count) return true;
        waiter.resolve();
        return false;
      });
    });
  }

  private shouldFail(kind: EventKind, event: AnyEvent): boolean {
    if (event.serviceCallId !== undefined && this.failingServiceCallIds.has(event.serviceCallId)) return true;
    const left = this.failuresLeft;
    if (left.count > 0 && (left.kind === "any" || left.kind === kind)) {
      left.count--;
      return true;
    }
    return false;
  }
}
