import type { DeliveredCommand } from "../../../src/app/commands/timer-command-processor.js";
import { formatInstant } from "../../../src/domain/due-time.js";
import { T0 } from "./fake-clock.js";

/** Builders of command messages as they arrive from the command stream. */

let sequence = 0;

export interface RawOptions {
  readonly brokerTimestampMs?: number;
  readonly sourceId?: string;
  readonly deliveryCount?: number;
  /** Sent with `Timer-Confirm: 1` (CONTRACT §19). */
  readonly confirm?: boolean;
}

const encoder = new TextEncoder();

/** A delivered message; an object body is sent as its JSON text, a string as its UTF-8 bytes. */
export function rawCommand(subject: string, body: unknown, options: RawOptions = {}): DeliveredCommand {
  const bytes = body instanceof Uint8Array ? body : encoder.encode(typeof body === "string" ? body : JSON.stringify(body));
  return {
    subject,
    body: bytes,
    brokerTimestampMs: options.brokerTimestampMs ?? T0,
    sourceId: options.sourceId ?? `TIMER_COMMANDS:${++sequence}`,
    deliveryCount: options.deliveryCount ?? 1,
    ...(options.confirm === undefined ? {} : { confirm: options.confirm }),
  };
}

export interface ScheduleFields {
  readonly id?: string;
  readonly tenantId?: string;
  readonly serviceCallId?: string;
  readonly dueAtMs?: number;
  readonly dueAt?: string;
  readonly data?: unknown;
  readonly correlationId?: string | null;
  readonly timestampMs?: number;
}

/** A ScheduleTimer envelope (object) with sensible defaults; `undefined` fields are left out. */
export function scheduleEnvelope(fields: ScheduleFields = {}): Record<string, unknown> {
  const tenantId = fields.tenantId ?? "acme";
  return dropUndefined({
    id: fields.id ?? `cmd-${++sequence}`,
    type: "ScheduleTimer",
    tenantId,
    correlationId: fields.correlationId,
    timestampMs: fields.timestampMs ?? T0,
    payload: dropUndefined({
      tenantId,
      serviceCallId: fields.serviceCallId ?? "call-1",
      dueAt: fields.dueAt ?? formatInstant(fields.dueAtMs ?? T0 + 60_000),
      data: fields.data,
    }),
  });
}

export interface CancelFields {
  readonly id?: string;
  readonly tenantId?: string;
  readonly serviceCallId?: string;
  readonly correlationId?: string | null;
  readonly timestampMs?: number;
}

export function cancelEnvelope(fields: CancelFields = {}): Record<string, unknown> {
  const tenantId = fields.tenantId ?? "acme";
  return dropUndefined({
    id: fields.id ?? `cmd-${++sequence}`,
    type: "CancelTimer",
    tenantId,
    correlationId: fields.correlationId,
    timestampMs: fields.timestampMs ?? T0,
    payload: { tenantId, serviceCallId: fields.serviceCallId ?? "call-1" },
  });
}

export const scheduleSubject = (tenant = "acme", prefix = "timer") => `${prefix}.commands.schedule.${tenant}`;
export const cancelSubject = (tenant = "acme", prefix = "timer") => `${prefix}.commands.cancel.${tenant}`;

function dropUndefined(object: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));
}
