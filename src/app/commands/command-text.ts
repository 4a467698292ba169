/** Text rules shared by the command fields (CONTRACT §2). */

export const TENANT_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** The tenant token of events whose command named no valid tenant. */
export const UNKNOWN_TENANT = "_unknown";

// eslint-disable-next-line no-control-regex -- control characters (C0, DEL, C1) are what this rejects
const CONTROL_CHARACTER = /[\u0000-\u001F\u007F-\u009F]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function isTenantId(value: unknown): value is string {
  return typeof value === "string" && value !== UNKNOWN_TENANT && TENANT_ID.test(value);
}

/** Length in Unicode code points, counting no further than `limit + 1`. */
function codePointLength(value: string, limit: number): number {
  let count = 0;
  for (const _ of value) if (++count > limit) break;
  return count;
}

/** A string of `min..max` code points with no unpaired surrogate (it could not be sent on as UTF-8). */
export function isCodePointText(value: unknown, min: number, max: number): value is string {
  if (typeof value !== "string" || value.length < min || value.length > max * 2) return false;
  const length = codePointLength(value, max);
  return length >= min && length <= max && !LONE_SURROGATE.test(value);
}

/** A command body is an envelope when it is a JSON object with its own `payload`; else a bare payload. */
export function isEnvelope(body: unknown): body is Record<string, unknown> {
  return typeof body === "object" && body !== null && !Array.isArray(body) && Object.hasOwn(body, "payload");
}

/** The sender's id of an envelope: 1 to 128 code points, else none. */
export function envelopeId(envelope: Record<string, unknown>): string | undefined {
  return isCodePointText(envelope.id, 1, 128) ? envelope.id : undefined;
}

export function isServiceCallId(value: unknown): value is string {
  return isCodePointText(value, 1, 256) && !CONTROL_CHARACTER.test(value);
}
