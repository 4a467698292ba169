import { randomBytes } from "node:crypto";
import type { z } from "zod";
import type { ScheduleTimerCommand, TimerCommand } from "../../domain/timer-command.js";
import { readInstant } from "../../domain/due-time.js";
import { firstOccurrenceAt, type Recurrence, type RecurrenceCalendar } from "../../domain/recurrence.js";
import type { Clock } from "../clock.js";
import type { TraceContext } from "../../domain/trace-context.js";
import type { TimerTracing } from "../timer-tracing.js";
import type { CommandRejected, RejectionCode } from "../timer-event-publisher.js";
import type { CommandType } from "../timer-metrics.js";
import { jsonDepth, toJsonText } from "./json-text.js";
import { DEFAULT_BACKOFF_MS, DEFAULT_COMPLETION_TIMEOUT_MS, type DeliveryPolicy } from "../../domain/delivery-rules.js";
import { envelopeId, isCodePointText, isEnvelope, isServiceCallId, isTenantId, UNKNOWN_TENANT } from "./command-text.js";
import { COMMAND_KINDS, isCommandKind, parseCommandSubject, type CommandSubject } from "../subjects.js";
import {
  cancelTimerPayloadSchema,
  cancelTimersByPrefixPayloadSchema,
  commandEnvelopeSchema,
  scheduleTimerPayloadSchema,
  timerCompletedPayloadSchema,
  timerFailedPayloadSchema,
  type CommandEnvelope,
  type RepeatPayload,
} from "./command-envelope.schema.js";

const MAX_COMMAND_BYTES = 64 * 1024;
/** The largest `payload.data`, as JSON (CONTRACT §2); an imported timer is held to it too. */
export const MAX_DATA_BYTES = 16_384;
/** Arrays and objects inside one another; deeper data breaks recursive JSON code in consumers. */
export const MAX_DATA_DEPTH = 64;
const DAY_MS = 86_400_000;

/** A message taken from the command stream, before anything is known about it. */
export interface RawCommand {
  readonly subject: string;
  readonly body: Uint8Array;
  /** When the broker stored the message: the timestamp of a bare payload. */
  readonly brokerTimestampMs: number;
  /** Stable id of this stream message, used to derive the id of its `CommandRejected`. */
  readonly sourceId: string;
  /** The message's valid W3C trace context (CONTRACT §13); absent when it had none. */
  readonly trace?: TraceContext | undefined;
}

export type DecodedCommand =
  | {
      readonly ok: true;
      readonly type: CommandType;
      readonly command: TimerCommand;
      /** The trace the command continues: the message's, or a new one (CONTRACT §13). */
      readonly trace: TraceContext;
      /** The envelope's `id`; absent for a bare payload. */
      readonly commandId?: string | undefined;
      /** The CommandRejected of this message, should a rule of the store refuse it later (a quota). */
      readonly refusal: (code: RejectionCode, reason: string) => CommandRejected;
    }
  | { readonly ok: false; readonly type: CommandType; readonly rejection: CommandRejected };

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** What a command's payload schema must give: the tenant, checked against the subject and envelope. */
interface TenantPayload {
  readonly tenantId: string;
}

/** What every command takes from its envelope (or, for a bare payload, from the broker). */
interface CommandMeta {
  readonly correlationId: string | null;
  readonly timestampMs: number;
  /** The trace the command continues; only a command that sets what its timer fires keeps it. */
  readonly trace: TraceContext;
}

type PayloadReading =
  | { readonly ok: true; readonly tenantId: string; readonly command: (meta: CommandMeta) => TimerCommand }
  | { readonly ok: false; readonly error: z.ZodError };

/** Parses a payload with `schema` and says how it becomes a command. */
function payloadReader<P extends TenantPayload>(
  schema: z.ZodType<P>,
  command: (payload: P, meta: CommandMeta) => TimerCommand,
): (payload: unknown) => PayloadReading {
  return (payload) => {
    const parsed = schema.safeParse(payload);
    if (!parsed.success) return { ok: false, error: parsed.error };
    return { ok: true, tenantId: parsed.data.tenantId, command: (meta) => command(parsed.data, meta) };
  };
}

/** The commands whose payload is checked by its schema alone (ScheduleTimer has rules of its own). */
const PAYLOAD_READERS: Partial<Record<CommandType, (payload: unknown) => PayloadReading>> = {
  CancelTimer: payloadReader(cancelTimerPayloadSchema, ({ tenantId, serviceCallId }, { correlationId, timestampMs }) => ({
    kind: "cancel",
    tenantId,
    serviceCallId,
    correlationId,
    timestampMs,
  })),
  // The same payload as CancelTimer (CONTRACT §14); the retried timer's events continue its trace.
  RetryTimer: payloadReader(cancelTimerPayloadSchema, ({ tenantId, serviceCallId }, { correlationId, timestampMs, trace }) => ({
    kind: "retry",
    tenantId,
    serviceCallId,
    correlationId,
    timestampMs,
    trace,
  })),
  CancelTimersByPrefix: payloadReader(
    cancelTimersByPrefixPayloadSchema,
    ({ tenantId, serviceCallIdPrefix }, { correlationId, timestampMs }) => ({
      kind: "cancelPrefix",
      tenantId,
      serviceCallIdPrefix,
      correlationId,
      timestampMs,
    }),
  ),
  TimerCompleted: payloadReader(timerCompletedPayloadSchema, ({ tenantId, serviceCallId, result }, { correlationId, timestampMs }) => ({
    kind: "complete",
    tenantId,
    serviceCallId,
    result: result ?? null,
    correlationId,
    timestampMs,
  })),
  TimerFailed: payloadReader(timerFailedPayloadSchema, ({ tenantId, serviceCallId, reason }, { correlationId, timestampMs }) => ({
    kind: "fail",
    tenantId,
    serviceCallId,
    reason,
    correlationId,
    timestampMs,
  })),
};

const INSTANT_FORMAT = "not an ISO 8601 date-time with an offset (Z or ±hh:mm)";
/** Longer texts are cut in a reason: a fraction may have any number of digits. */
const MAX_QUOTED_INSTANT = 40;

/**
 * The epoch milliseconds of an instant field, or its INVALID_FIELD reason: a text in the right
 * shape that names no instant is quoted with what is wrong (`payload.dueAt "2026-02-30T09:00:00Z": no such date`).
 */
function instantField(field: string, text: string): number | string {
  const reading = readInstant(text);
  if (reading.ok) return reading.epochMs;
  if (reading.problem === "format") return `${field}: ${INSTANT_FORMAT}`;
  const quoted = text.length > MAX_QUOTED_INSTANT ? `${text.slice(0, MAX_QUOTED_INSTANT)}…` : text;
  return `${field} "${quoted}": ${reading.problem}`;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The id (and Nats-Msg-Id) of the CommandRejected for one stream message: a republish is the same event. */
export function rejectionId(sourceId: string): string {
  return `rejected:${sourceId}`;
}

/**
 * Turns the bytes on a command subject into a `TimerCommand`, or into the `CommandRejected` that
 * the first failing rule of CONTRACT §2 calls for. Never throws on input.
 */
export class CommandDecoder {
  constructor(
    private readonly options: {
      readonly subjectPrefix: string;
      readonly maxHorizonDays: number;
      /** How far ahead of the clock an envelope's `timestampMs` may be. */
      readonly maxClockSkewMs: number;
      readonly clock: Clock;
      /** Checks cron rules and time zones, and finds a cron rule's first occurrence. */
      readonly calendar: RecurrenceCalendar;
      /** Starts the trace of a command without `traceparent`; default: a new sampled trace. */
      readonly tracing?: Pick<TimerTracing, "newTrace">;
    },
  ) {}

  decode(raw: RawCommand): DecodedCommand {
    const subject = parseCommandSubject(this.options.subjectPrefix, raw.subject);
    const subjectTenant = subject.tenantToken !== undefined && isTenantId(subject.tenantToken) ? subject.tenantToken : undefined;
    const type: CommandType = isCommandKind(subject.kind) ? COMMAND_KINDS[subject.kind] : "unknown";
    const context = new RejectionContext(raw, type, subjectTenant ?? UNKNOWN_TENANT);
    const decoded = this.#decode(raw, subject, subjectTenant, type, context);
    if (!decoded.ok) return decoded;
    // A new object, not a spread of `decoded`: copying the command's objects costs more than decoding it.
    return {
      ok: true,
      type,
      command: decoded.command,
      trace: decoded.trace,
      commandId: context.id,
      refusal: (code, reason) => (context.reject(code, reason) as { rejection: CommandRejected }).rejection,
    };
  }

  #decode(
    raw: RawCommand,
    subject: CommandSubject,
    subjectTenant: string | undefined,
    type: CommandType,
    context: RejectionContext,
  ): DecodedCommand | { readonly ok: true; readonly command: TimerCommand; readonly trace: TraceContext } {
    if (raw.body.byteLength > MAX_COMMAND_BYTES) {
      return context.reject("TOO_LARGE", `message body is ${raw.body.byteLength} bytes, over ${MAX_COMMAND_BYTES}`);
    }
    let body: unknown;
    try {
      body = JSON.parse(utf8.decode(raw.body));
    } catch {
      return context.reject("INVALID_JSON", "message body is not UTF-8 JSON");
    }
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      return context.reject("INVALID_ENVELOPE", "message body is not a JSON object");
    }
    const enveloped = isEnvelope(body);
    if (enveloped) context.readEnvelope(body as Record<string, unknown>);
    else context.readPayload(body as Record<string, unknown>);

    let envelope: CommandEnvelope | undefined;
    if (enveloped) {
      const parsed = commandEnvelopeSchema.safeParse(body);
      if (!parsed.success) return context.reject("INVALID_ENVELOPE", describeIssue("envelope", parsed.error));
      envelope = parsed.data;
      // A timestamp far ahead would make every later command of the key look stale (§3.2) for good.
      if (envelope.timestampMs > this.options.clock.now() + this.options.maxClockSkewMs) {
        return context.reject(
          "INVALID_ENVELOPE",
          `envelope.timestampMs: more than ${this.options.maxClockSkewMs} ms ahead of the service's clock (TIMER_MAX_CLOCK_SKEW_MS)`,
        );
      }
    }
    if (subjectTenant === undefined) {
      return context.reject("INVALID_ENVELOPE", `subject "${raw.subject}" is not ${this.options.subjectPrefix}.commands.{kind}.{tenantId}`);
    }
    const { kind } = subject;
    if (!subject.inLayout || type === "unknown") {
      return context.reject("UNKNOWN_TYPE", `subject kind "${kind}" is not one of ${Object.keys(COMMAND_KINDS).join(", ")}`);
    }
    if (envelope !== undefined && envelope.type !== type) {
      return context.reject("UNKNOWN_TYPE", `envelope type "${envelope.type}" is not ${type}, the command of subject kind "${kind}"`);
    }

    const payload = envelope?.payload ?? (body as Record<string, unknown>);
    const timestampMs = envelope?.timestampMs ?? raw.brokerTimestampMs;
    const correlationId = envelope?.correlationId ?? null;

    const reader = PAYLOAD_READERS[type];
    if (reader !== undefined) {
      const reading = reader(payload);
      if (!reading.ok) return context.reject("INVALID_FIELD", describeIssue("payload", reading.error));
      const mismatch = tenantMismatch(subjectTenant, envelope?.tenantId, reading.tenantId);
      if (mismatch !== undefined) return context.reject("TENANT_MISMATCH", mismatch);
      const trace = raw.trace ?? this.newTrace();
      return { ok: true, command: reading.command({ correlationId, timestampMs, trace }), trace };
    }

    const parsed = scheduleTimerPayloadSchema.safeParse(payload);
    if (!parsed.success) return context.reject("INVALID_FIELD", describeIssue("payload", parsed.error));
    const requestedDueAtMs = instantField("payload.dueAt", parsed.data.dueAt);
    if (typeof requestedDueAtMs === "string") return context.reject("INVALID_FIELD", requestedDueAtMs);
    const repeat = this.readRepeat(parsed.data.repeat ?? null, requestedDueAtMs);
    if (typeof repeat === "string") return context.reject("INVALID_FIELD", repeat);
    const deliveryPayload = parsed.data.delivery ?? null;
    if (deliveryPayload !== null && repeat !== null)
      return context.reject("INVALID_FIELD", "payload.delivery: not allowed together with payload.repeat");
    const delivery: DeliveryPolicy | null =
      deliveryPayload === null
        ? null
        : {
            maxRetries: deliveryPayload.maxRetries,
            backoffMs: deliveryPayload.backoffMs ?? DEFAULT_BACKOFF_MS,
            completionTimeoutMs: deliveryPayload.completionTimeoutMs ?? DEFAULT_COMPLETION_TIMEOUT_MS,
          };
    if (jsonDepth(parsed.data.data, MAX_DATA_DEPTH) > MAX_DATA_DEPTH) {
      return context.reject("INVALID_FIELD", `payload.data: nested deeper than ${MAX_DATA_DEPTH} levels`);
    }
    const dueAtMs = repeat?.firstDueAtMs ?? requestedDueAtMs;
    const maxLatenessMs = parsed.data.maxLatenessMs ?? null;
    const mismatch = tenantMismatch(subjectTenant, envelope?.tenantId, parsed.data.tenantId);
    if (mismatch !== undefined) return context.reject("TENANT_MISMATCH", mismatch);
    const data = parsed.data.data === undefined || parsed.data.data === null ? null : toJsonText(parsed.data.data);
    if (data !== null) {
      const bytes = Buffer.byteLength(data, "utf8");
      if (bytes > MAX_DATA_BYTES) return context.reject("TOO_LARGE", `payload.data is ${bytes} bytes as JSON, over ${MAX_DATA_BYTES}`);
    }
    const horizonMs = this.options.clock.now() + this.options.maxHorizonDays * DAY_MS;
    if (dueAtMs > horizonMs) {
      return context.reject("DUE_TOO_FAR", `payload.dueAt is more than ${this.options.maxHorizonDays} days ahead`);
    }
    const { tenantId, serviceCallId } = parsed.data;
    const trace = raw.trace ?? this.newTrace();
    const command: Mutable<ScheduleTimerCommand> = {
      kind: "schedule",
      tenantId,
      serviceCallId,
      dueAtMs,
      data,
      correlationId,
      timestampMs,
      repeat,
      maxLatenessMs,
      trace,
    };
    // The optional members are set only when given: assigned, not spread in, which costs far more.
    if (delivery !== null) command.delivery = delivery;
    if (parsed.data.createdBy != null) command.createdBy = parsed.data.createdBy;
    if (parsed.data.createdVia != null) command.createdVia = parsed.data.createdVia;
    return { ok: true, command, trace };
  }

  private newTrace(): TraceContext {
    return this.options.tracing?.newTrace() ?? { traceId: randomBytes(16).toString("hex"), traceFlags: 1, traceState: null, spanId: null };
  }

  /** The rule of `payload.repeat` with its first occurrence, or the INVALID_FIELD reason (CONTRACT §10). */
  private readRepeat(repeat: RepeatPayload | null, dueAtMs: number): Recurrence | null | string {
    if (repeat === null) return null;
    const { everyMs, cron, timezone, until, maxOccurrences } = repeat;
    if ((everyMs === undefined) === (cron === undefined)) return "payload.repeat: needs exactly one of everyMs and cron";
    if (timezone !== undefined && cron === undefined) return "payload.repeat.timezone: only with cron";
    let untilMs: number | null = null;
    if (until !== undefined) {
      const parsed = instantField("payload.repeat.until", until);
      if (typeof parsed === "string") return parsed;
      untilMs = parsed;
    }
    const bounds = { untilMs, maxOccurrences: maxOccurrences ?? null };
    let rule;
    if (cron !== undefined) {
      const zone = timezone ?? "UTC";
      const problem = this.options.calendar.problem(cron, zone);
      if (problem !== undefined) return `payload.repeat.${problem.field}: ${problem.reason}`;
      rule = { cron, timezone: zone, ...bounds };
    } else {
      rule = { everyMs: everyMs!, ...bounds };
    }
    const firstDueAtMs = firstOccurrenceAt(rule, dueAtMs, this.options.calendar);
    if (firstDueAtMs === null) {
      if (untilMs !== null && firstOccurrenceAt({ ...rule, untilMs: null }, dueAtMs, this.options.calendar) !== null) {
        return "payload.repeat.until: before the first occurrence";
      }
      return "payload.repeat.cron: has no occurrence at or after dueAt";
    }
    return { ...rule, firstDueAtMs };
  }
}

/** Collects what a rejection can echo back, as far as the message could be read. */
class RejectionContext {
  private commandId: string | undefined;
  private correlationId: string | undefined;
  private serviceCallId: string | undefined;

  constructor(
    private readonly raw: RawCommand,
    private readonly type: CommandType,
    private readonly tenant: string,
  ) {}

  /** The envelope's `id`, once read. */
  get id(): string | undefined {
    return this.commandId;
  }

  readEnvelope(envelope: Record<string, unknown>): void {
    this.commandId = envelopeId(envelope);
    if (isCodePointText(envelope.correlationId, 1, 128)) this.correlationId = envelope.correlationId;
    const payload = envelope.payload;
    if (typeof payload === "object" && payload !== null) this.readPayload(payload as Record<string, unknown>);
  }

  readPayload(payload: Record<string, unknown>): void {
    if (isServiceCallId(payload.serviceCallId)) this.serviceCallId = payload.serviceCallId;
  }

  reject(code: RejectionCode, reason: string): DecodedCommand {
    return {
      ok: false,
      type: this.type,
      rejection: {
        id: rejectionId(this.raw.sourceId),
        tenant: this.tenant,
        code,
        reason,
        subject: this.raw.subject,
        ...(this.commandId === undefined ? {} : { commandId: this.commandId }),
        ...(this.serviceCallId === undefined ? {} : { serviceCallId: this.serviceCallId }),
        ...(this.correlationId === undefined ? {} : { correlationId: this.correlationId }),
        ...(this.raw.trace === undefined ? {} : { trace: this.raw.trace }),
      },
    };
  }
}

function describeIssue(root: string, error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return `${root} is malformed`;
  const path = [root, ...issue.path.map(String)].join(".");
  return `${path}: ${issue.message}`;
}

function tenantMismatch(subject: string, envelope: string | undefined, payload: string): string | undefined {
  if (envelope !== undefined && envelope !== subject) {
    return `envelope tenantId "${envelope}" differs from subject tenant "${subject}"`;
  }
  if (payload !== subject) return `payload tenantId "${payload}" differs from subject tenant "${subject}"`;
  return undefined;
}
