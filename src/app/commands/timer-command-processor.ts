import { scheduledDelta } from "../../domain/command-rules.js";
import type { AppliedDecision } from "../applied-decision.js";
import type { TimerCommand } from "../../domain/timer-command.js";
import type { CommandRejected } from "../timer-event-publisher.js";
import type { Clock } from "../clock.js";
import type { Logger } from "../logger.js";
import type { TimerEventPublisher } from "../timer-event-publisher.js";
import type { CommandType, TimerMetrics } from "../timer-metrics.js";
import type { TimerStore } from "../timer-store.js";
import type { CommandSpan, TimerSpanAttributes, TimerTracing } from "../timer-tracing.js";
import { rejectionId, type CommandDecoder, type RawCommand } from "./command-decoder.js";
import { isTenantId, UNKNOWN_TENANT } from "./command-text.js";
import { parseCommandSubject } from "../subjects.js";
import { doublingBackoffMs } from "../doubling-backoff.js";
import { mapInSlices } from "../in-slices.js";
import { commandIdOf, type CommandOutcomes, type OutcomeTimer } from "./command-outcomes.js";
import { decisionOutcome, outcomeTimer } from "./decision-outcome.js";
import type { CommandNote } from "../../domain/timer-history.js";

/** What the broker is to do with one command message; mapped one-to-one onto ack / nak / term. */
export type CommandSettlement =
  { readonly kind: "ack" } | { readonly kind: "nak"; readonly delayMs: number } | { readonly kind: "term"; readonly reason: string };

/** A command message as the processor needs it: the raw message plus how often it was delivered. */
export interface DeliveredCommand extends RawCommand {
  readonly deliveryCount: number;
  /** Sent with `Timer-Confirm: 1` (CONTRACT §19): its outcome is sent once decided. Read only with `outcomes`. */
  readonly confirm?: boolean;
}

const ACK: CommandSettlement = { kind: "ack" };

/** A batch's place in the order of applies (TimerCommandProcessor.applyTurn). */
interface ApplyTurn {
  readonly apply: (commands: TimerCommand[], notes?: (CommandNote | undefined)[]) => Promise<AppliedDecision[] | undefined>;
  readonly end: () => void;
}
/** Decoding between two turns of the event loop. */
const DECODE_SLICE_MS = 5;

type Refusal = (code: CommandRejected["code"], reason: string) => CommandRejected;
const RETRY_BASE_MS = 250;
/** Short enough that commands are stored within seconds once a storage fault clears. */
const RETRY_MAX_MS = 5_000;
/**
 * A report that may have overtaken the record of its timer's publish is delivered again this many
 * times at most, REPORT_RETRY_MS apart, before it counts as ignored (CONTRACT §11).
 */
const REPORT_RETRY_DELIVERIES = 5;
const REPORT_RETRY_MS = 200;

/** Redelivery delay after a transient fault: doubling per delivery, capped. */
export function redeliveryDelayMs(deliveryCount: number): number {
  return doublingBackoffMs(deliveryCount, RETRY_BASE_MS, RETRY_MAX_MS);
}

export interface TimerCommandProcessorDeps {
  readonly decoder: CommandDecoder;
  readonly store: TimerStore;
  readonly publisher: TimerEventPublisher;
  readonly clock: Clock;
  readonly metrics: TimerMetrics;
  readonly logger: Logger;
  /** Told the earliest due time a batch scheduled, so the worker can wake for it. */
  readonly onScheduled: (earliestDueAtMs: number) => void;
  /** TIMER_RETENTION_HOURS in ms (CONTRACT §7): older commands are ignored. 0 or absent: none is too old. */
  readonly retentionMs?: number;
  /** Told that a batch recorded a `CancelTimersByPrefix`, so its background sweep can start. */
  readonly onPrefixCancelled?: () => void;
  /** Told the retry time a `TimerFailed` set (CONTRACT §11), so the deadline loop can wake for it. */
  readonly onDeadline?: (deadlineAtMs: number) => void;
  /** TIMER_TENANT_MAX_PENDING (CONTRACT §12): Scheduled timers per tenant; 0 or absent: no quota. */
  readonly maxPendingPerTenant?: number;
  /** Spans of stored commands (CONTRACT §13); absent: none. */
  readonly tracing?: Pick<TimerTracing, "startCommand">;
  /** Where the outcomes of commands sent with `Timer-Confirm: 1` go (CONTRACT §19); absent: none is sent. */
  readonly outcomes?: CommandOutcomes;
  /** TIMER_HISTORY_ENTRIES (CONTRACT §19): entries each timer's history keeps; 0 or absent: none. */
  readonly historyEntries?: number;
}

/**
 * What a command's span records, read by the tracer as it needs it: the delivery info behind the
 * message id is parsed on first use, and the object costs one allocation per command.
 */
class CommandSpanAttributes implements TimerSpanAttributes {
  constructor(
    private readonly message: DeliveredCommand,
    private readonly command: TimerCommand,
  ) {}

  get subject(): string {
    return this.message.subject;
  }

  get messageId(): string {
    return this.message.sourceId;
  }

  get tenantId(): string {
    return this.command.tenantId;
  }

  get serviceCallId(): string | undefined {
    return this.command.kind === "cancelPrefix" ? undefined : this.command.serviceCallId;
  }
}

/**
 * The command use case (ScheduleTimer, CancelTimer, CancelTimersByPrefix, RetryTimer and the
 * completion reports TimerCompleted / TimerFailed): decodes a batch of command messages, applies
 * the valid ones in one storage transaction, publishes a `CommandRejected` for each invalid one, and
 * says how to settle each message. A message is acked only after its effect is committed.
 */
export class TimerCommandProcessor {
  /** Resolves once the turns of every batch so far are over (each handed over, or with nothing to apply). */
  #lastApply: Promise<void> = Promise.resolve();

  constructor(private readonly deps: TimerCommandProcessorDeps) {}

  async process(batch: readonly DeliveredCommand[]): Promise<CommandSettlement[]> {
    // Taken before decoding, which yields: batches apply in the order they came, however long each decodes.
    const turn = this.applyTurn();
    try {
      return await this.processInTurn(batch, turn);
    } finally {
      turn.end();
    }
  }

  private async processInTurn(batch: readonly DeliveredCommand[], turn: ApplyTurn): Promise<CommandSettlement[]> {
    const settlements = new Array<CommandSettlement>(batch.length);
    // What a timer's history records of each command beyond the command; nothing when none is kept.
    const history = (this.deps.historyEntries ?? 0) > 0;
    const valid: {
      index: number;
      type: CommandType;
      command: TimerCommand;
      refusal: Refusal;
      span: CommandSpan | undefined;
      commandId: string | undefined;
      note: CommandNote | undefined;
    }[] = [];
    const rejected: Promise<void>[] = [];
    // In slices: the answers of a store working on the batch before (its read, its commit) are
    // taken between them, so that the store does not wait for this whole batch's decoding.
    await mapInSlices(batch, DECODE_SLICE_MS, (message, index) => {
      const decoded = this.decode(message);
      if (decoded.ok) {
        const { command, span } = this.startSpan(message, decoded);
        const { commandId } = decoded;
        const note = history ? { commandId, traceId: span?.trace.traceId ?? decoded.trace.traceId } : undefined;
        valid.push({ index, type: decoded.type, refusal: decoded.refusal, command, span, commandId, note });
      } else rejected.push(this.reject(message, decoded.type, decoded.rejection).then((s) => void (settlements[index] = s)));
    });
    // Nothing to apply: the turn passes on now, not after the rejections are published.
    if (valid.length === 0) turn.end();
    else {
      const applied = await turn.apply(
        valid.map((v) => v.command),
        history ? valid.map((v) => v.note) : undefined,
      );
      valid.forEach((v, i) => {
        const decision = applied?.[i];
        v.span?.end(decision?.outcome ?? "not stored");
        // Its deliveryCount is read only where a settlement depends on it: the broker's delivery info is parsed on first use.
        const message = batch[v.index]!;
        if (decision?.outcome === "refused") {
          const timer = decision.previous === undefined ? undefined : outcomeTimer(decision.previous);
          rejected.push(
            this.reject(message, v.type, v.refusal(decision.code, decision.reason), timer).then((s) => void (settlements[v.index] = s)),
          );
          return;
        }
        if (decision?.outcome === "ignored" && decision.retryLater === true && message.deliveryCount < REPORT_RETRY_DELIVERIES) {
          settlements[v.index] = { kind: "nak", delayMs: REPORT_RETRY_MS };
          return;
        }
        settlements[v.index] = applied === undefined ? { kind: "nak", delayMs: redeliveryDelayMs(message.deliveryCount) } : ACK;
        if (decision !== undefined) {
          this.deps.metrics.commandHandled(v.type, decision.outcome);
          // After the commit (applyNow returned): a query made once the outcome arrives sees the command.
          if (this.deps.outcomes !== undefined && message.confirm === true) this.confirmStored(message, v.command, v.commandId, decision);
        }
      });
    }
    await Promise.all(rejected);
    return settlements;
  }

  /**
   * Opens the span of a command about to be stored; a command that sets what its timer fires keeps
   * the span's trace, so its events hang under the service's span of it.
   */
  private startSpan(
    message: DeliveredCommand,
    decoded: Extract<ReturnType<CommandDecoder["decode"]>, { ok: true }>,
  ): { command: TimerCommand; span?: CommandSpan } {
    const { tracing } = this.deps;
    const { command } = decoded;
    if (tracing === undefined) return { command };
    const span = tracing.startCommand(decoded.trace, new CommandSpanAttributes(message, command));
    // The decoder already put its trace on the command; only a span's own trace replaces it.
    const retraced = (command.kind === "schedule" || command.kind === "retry") && span.trace !== decoded.trace;
    return { command: retraced ? { ...command, trace: span.trace } : command, span };
  }

  private decode(message: DeliveredCommand): ReturnType<CommandDecoder["decode"]> {
    try {
      return this.deps.decoder.decode(message);
    } catch (error) {
      // A decoder bug must not stop the consumer: the message is refused like malformed input,
      // on its own tenant's subject when the subject names one, so that its sender hears of it.
      this.deps.logger.error({ err: error, subject: message.subject }, "command decoder failed");
      const { tenantToken } = parseCommandSubject("", message.subject);
      return {
        ok: false,
        type: "unknown",
        rejection: {
          id: rejectionId(message.sourceId),
          tenant: isTenantId(tenantToken) ? tenantToken : UNKNOWN_TENANT,
          code: "INVALID_ENVELOPE",
          reason: "message could not be decoded",
          subject: message.subject,
        },
      };
    }
  }

  /**
   * A batch's turn to apply, after every batch that came before it: batches may be processed two at
   * a time (one decoded while the other is stored), but they are handed to the store in the order
   * they came — this is the one place that keeps that order; the store applies its calls in call
   * order (TimerStore.applyCommands), so the next batch is handed over as soon as this one is, and
   * waits in the store behind this one's commit. `end` (called once the batch is done, whatever
   * happened) passes the turn on at the latest.
   */
  private applyTurn(): ApplyTurn {
    const previous = this.#lastApply;
    let end!: () => void;
    const ended = new Promise<void>((resolve) => (end = resolve));
    // After the earlier turns too: a batch that ends its turn early must not let a later one overtake an earlier one.
    this.#lastApply = previous.then(() => ended);
    return {
      apply: async (commands, notes) => {
        await previous;
        // applyNow hands the batch to the store before it first awaits.
        const applying = this.applyNow(commands, notes);
        end();
        return applying;
      },
      end,
    };
  }

  /** Commits the commands; undefined when storage failed (nothing was committed). */
  private async applyNow(commands: TimerCommand[], notes?: (CommandNote | undefined)[]): Promise<AppliedDecision[] | undefined> {
    const { store, clock, metrics, logger } = this.deps;
    let decisions: AppliedDecision[];
    try {
      // The rules travel with the batch: the store decides where it writes (command-batch.ts).
      decisions = await store.applyCommands(commands, {
        nowMs: clock.now(),
        maxPendingPerTenant: this.deps.maxPendingPerTenant ?? 0,
        retentionMs: this.deps.retentionMs ?? 0,
        ...(notes === undefined ? {} : { historyEntries: this.deps.historyEntries, commandNotes: notes }),
      });
    } catch (error) {
      logger.error({ err: error, commands: commands.length }, "storing commands failed; they will be redelivered");
      return undefined;
    }
    let pendingDelta = 0;
    let earliestDueAtMs = Number.POSITIVE_INFINITY;
    if (decisions.some((d, i) => d.outcome === "accepted" && commands[i]!.kind === "cancelPrefix")) this.deps.onPrefixCancelled?.();
    for (const decision of decisions) {
      pendingDelta += scheduledDelta(decision);
      const next = decision.next;
      if (next?.state === "Scheduled" && next.dueAtMs !== null && next.dueAtMs < earliestDueAtMs) earliestDueAtMs = next.dueAtMs;
    }
    if (pendingDelta !== 0) metrics.addPending(pendingDelta);
    this.countReports(decisions);
    if (earliestDueAtMs !== Number.POSITIVE_INFINITY) this.deps.onScheduled(earliestDueAtMs);
    return decisions;
  }

  /** Counts the deliveries reports ended (CONTRACT §11 metrics) and announces retry deadlines. */
  private countReports(decisions: readonly AppliedDecision[]): void {
    const durations: number[] = [];
    let failed = 0;
    for (const { previous, next } of decisions) {
      if (previous?.state !== "Fired" || next === undefined) continue;
      if (next.state === "Completed" && next.completedAtMs != null && next.firedAtMs != null)
        durations.push((next.completedAtMs - next.firedAtMs) / 1000);
      else if (next.state === "Failed") failed++;
      else if (next.state === "Fired" && next.deadlineAtMs != null) this.deps.onDeadline?.(next.deadlineAtMs);
    }
    if (durations.length > 0) {
      this.deps.metrics.deliveriesCounted("completed", durations.length);
      this.deps.metrics.deliveriesCompleted(durations);
    }
    if (failed > 0) this.deps.metrics.deliveriesCounted("failed", failed);
  }

  /** Sends the outcome of a stored command (applied or ignored, and why) to the sender who asked for it. */
  private confirmStored(message: DeliveredCommand, command: TimerCommand, commandId: string | undefined, decision: AppliedDecision): void {
    if (decision.outcome === "refused") return;
    const { outcome, reason, timer } = decisionOutcome(command, decision, {
      nowMs: this.deps.clock.now(),
      retentionMs: this.deps.retentionMs ?? 0,
      deliveryCount: message.deliveryCount,
    });
    this.deps.outcomes!.send({
      tenantId: command.tenantId,
      // A bare payload has no id of its own: its stream message id stands in, as in its CommandRejected.
      commandId: commandId ?? message.sourceId,
      ...(command.kind === "cancelPrefix" ? {} : { serviceCallId: command.serviceCallId }),
      outcome,
      reason,
      ...(timer === undefined ? {} : { timer }),
    });
  }

  /**
   * Publishes the rejection, then settles: term once it is out, retry later if it could not be sent.
   * Its outcome, when asked for, follows the published rejection (`timer`: the timer a store's rule left as it was).
   */
  private async reject(
    message: DeliveredCommand,
    type: CommandType,
    rejection: Parameters<TimerEventPublisher["publishCommandRejected"]>[0],
    timer?: OutcomeTimer,
  ): Promise<CommandSettlement> {
    const { publisher, metrics, logger } = this.deps;
    try {
      await publisher.publishCommandRejected(rejection);
    } catch (error) {
      logger.error(
        { err: error, subject: message.subject, code: rejection.code },
        "publishing CommandRejected failed; the command will be redelivered",
      );
      return { kind: "nak", delayMs: redeliveryDelayMs(message.deliveryCount) };
    }
    metrics.commandHandled(type, "rejected");
    metrics.commandRejected(rejection.code);
    if (this.deps.outcomes !== undefined && message.confirm === true) {
      this.deps.outcomes.send({
        tenantId: rejection.tenant,
        commandId: rejection.commandId ?? commandIdOf(message),
        ...(rejection.serviceCallId === undefined ? {} : { serviceCallId: rejection.serviceCallId }),
        outcome: "rejected",
        code: rejection.code,
        reason: rejection.reason,
        ...(timer === undefined ? {} : { timer }),
      });
    }
    logger.warn(
      {
        subject: message.subject,
        code: rejection.code,
        reason: rejection.reason,
        commandId: rejection.commandId,
        serviceCallId: rejection.serviceCallId,
      },
      "command rejected",
    );
    return { kind: "term", reason: `${rejection.code}: ${rejection.reason}` };
  }
}
