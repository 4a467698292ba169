import { dueEventId, formatInstant } from "../../domain/due-time.js";
import type { CommandRejected, DueTimeMissed, DueTimeReached } from "../../app/timer-event-publisher.js";

/**
 * JSON text of the events (CONTRACT §2). Built by concatenation so that a timer's stored `data`
 * text goes out as it is, without a parse and re-serialization per event.
 */

const json = JSON.stringify;

/**
 * Timers of one poll share their reachedAt, and a burst often shares its dueAt: remembering the last
 * formatted instant of each saves a Date and an ISO formatting per event.
 */
class InstantFormatCache {
  private lastMs = Number.NaN;
  private lastText = "";

  format(epochMs: number): string {
    if (epochMs !== this.lastMs) {
      this.lastMs = epochMs;
      this.lastText = formatInstant(epochMs);
    }
    return this.lastText;
  }
}

const dueAtFormat = new InstantFormatCache();
const reachedAtFormat = new InstantFormatCache();

export function dueTimeReachedJson(event: DueTimeReached, timestampMs: number): string {
  const {
    tenantId,
    serviceCallId,
    dueAtMs,
    reachedAtMs,
    generation,
    data,
    correlationId,
    occurrence,
    missedOccurrences,
    missedOccurrencesCapped,
    attempt,
  } = event;
  const tenant = json(tenantId);
  return (
    `{"id":${json(dueEventId(tenantId, serviceCallId, dueAtMs, generation, attempt))},"type":"DueTimeReached","tenantId":${tenant}` +
    (correlationId === null ? "" : `,"correlationId":${json(correlationId)}`) +
    `,"timestampMs":${timestampMs},"payload":{"tenantId":${tenant},"serviceCallId":${json(serviceCallId)}` +
    `,"dueAt":"${dueAtFormat.format(dueAtMs)}","reachedAt":"${reachedAtFormat.format(reachedAtMs)}"` +
    (data === null ? "" : `,"data":${data}`) +
    `,"generation":${generation},"lateMs":${reachedAtMs - dueAtMs}` +
    (occurrence === undefined || occurrence === null ? "" : `,"occurrence":${occurrence}`) +
    (missedOccurrences === undefined || missedOccurrences === 0 ? "" : `,"missedOccurrences":${missedOccurrences}`) +
    (missedOccurrencesCapped === true ? `,"missedOccurrencesCapped":true` : "") +
    (attempt === undefined ? "" : `,"attempt":${attempt}`) +
    "}}"
  );
}

export function dueTimeMissedJson(event: DueTimeMissed, timestampMs: number): string {
  const { tenantId, serviceCallId, dueAtMs, missedAtMs, generation, data, correlationId, occurrence } = event;
  const tenant = json(tenantId);
  return (
    `{"id":${json(dueEventId(tenantId, serviceCallId, dueAtMs, generation))},"type":"DueTimeMissed","tenantId":${tenant}` +
    (correlationId === null ? "" : `,"correlationId":${json(correlationId)}`) +
    `,"timestampMs":${timestampMs},"payload":{"tenantId":${tenant},"serviceCallId":${json(serviceCallId)}` +
    `,"dueAt":"${formatInstant(dueAtMs)}","missedAt":"${formatInstant(missedAtMs)}"` +
    (data === null ? "" : `,"data":${data}`) +
    `,"generation":${generation},"lateMs":${missedAtMs - dueAtMs}` +
    (occurrence === undefined || occurrence === null ? "" : `,"occurrence":${occurrence}`) +
    "}}"
  );
}

export function commandRejectedJson(event: CommandRejected, timestampMs: number): string {
  return json({
    id: event.id,
    type: "CommandRejected",
    tenantId: event.tenant,
    ...(event.correlationId === undefined ? {} : { correlationId: event.correlationId }),
    timestampMs,
    payload: {
      code: event.code,
      reason: event.reason,
      subject: event.subject,
      ...(event.commandId === undefined ? {} : { commandId: event.commandId }),
      ...(event.serviceCallId === undefined ? {} : { serviceCallId: event.serviceCallId }),
    },
  });
}
