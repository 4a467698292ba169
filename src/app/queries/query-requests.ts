import { z } from "zod";
import { parseInstant } from "../../domain/due-time.js";
import { isCodePointText, isServiceCallId } from "../commands/command-text.js";
import { TIMER_STATES, type ChangedPosition, type ListPosition } from "./timer-queries.js";

/**
 * Shapes of query requests (CONTRACT §9), the same over NATS (the JSON body) and HTTP (the query
 * string, with `limit` read as a number). Unknown members are refused, so a misspelt filter is an
 * error rather than a silently wider answer. `null` counts as absent.
 */

export const MAX_LIST_LIMIT = 1000;
export const DEFAULT_LIST_LIMIT = 100;

const instant = z.string().transform((text, ctx) => {
  const ms = parseInstant(text);
  if (ms === undefined) {
    ctx.addIssue({ code: "custom", message: "must be an ISO 8601 date-time with an offset (Z or ±hh:mm)" });
    return z.NEVER;
  }
  return ms;
});

const cursor = z.string().transform((text, ctx) => {
  const position = decodeAnyCursor(text);
  if (position === undefined) {
    ctx.addIssue({ code: "custom", message: "is not a cursor returned by list" });
    return z.NEVER;
  }
  return position;
});

export const getRequestSchema = z.strictObject({
  serviceCallId: z.string().refine(isServiceCallId, "must be 1..256 code points without control characters"),
  /** CONTRACT §19: the reply adds the timer's history. */
  history: z.boolean().nullish(),
});

export const listRequestSchema = z.strictObject({
  state: z.enum(TIMER_STATES).nullish(),
  serviceCallIdPrefix: z
    .string()
    .refine((s) => isCodePointText(s, 1, 256), "must be 1..256 code points")
    .nullish(),
  dueAfter: instant.nullish(),
  dueBefore: instant.nullish(),
  limit: z.number().int().min(1).max(MAX_LIST_LIMIT).nullish(),
  cursor: cursor.nullish(),
  createdBy: z
    .string()
    .refine((s) => isCodePointText(s, 1, 128), "must be 1..128 code points")
    .nullish(),
  changedSince: instant.nullish(),
  order: z.enum(["due", "changedDesc"]).nullish(),
});

export const statsRequestSchema = z.strictObject({});

export type ListRequest = z.output<typeof listRequestSchema>;

/** The first problem of a failed parse, as one line: `limit: Too big: expected number to be <=1000`. */
export function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return "invalid request";
  if (issue.code === "unrecognized_keys") return `unknown member${issue.keys.length > 1 ? "s" : ""} ${issue.keys.join(", ")}`;
  const path = issue.path.map(String).join(".");
  return path === "" ? issue.message : `${path}: ${issue.message}`;
}

const CURSOR_VERSION = 1;

/** An opaque cursor: base64url of `[1, snapshotMs, dueAtMs, serviceCallId]`. */
export function encodeCursor(position: ListPosition): string {
  return Buffer.from(JSON.stringify([CURSOR_VERSION, position.snapshotMs, position.dueAtMs, position.serviceCallId])).toString("base64url");
}

const CHANGED_CURSOR_VERSION = 2;

/** A cursor of a `changedDesc` listing: base64url of `[2, snapshotMs, updatedAtMs, serviceCallId]`. */
export function encodeChangedCursor(position: ChangedPosition): string {
  const fields = [CHANGED_CURSOR_VERSION, position.snapshotMs, position.updatedAtMs, position.serviceCallId];
  return Buffer.from(JSON.stringify(fields)).toString("base64url");
}

/** Either kind of cursor, told apart by `order`. */
export type AnyCursor = ({ readonly order: "due" } & ListPosition) | ({ readonly order: "changedDesc" } & ChangedPosition);

export function decodeAnyCursor(text: string): AnyCursor | undefined {
  const due = decodeCursor(text);
  if (due !== undefined) return { order: "due", ...due };
  const fields = cursorFields(text, CHANGED_CURSOR_VERSION);
  if (fields === undefined) return undefined;
  const [snapshotMs, updatedAtMs, serviceCallId] = fields;
  return { order: "changedDesc", snapshotMs, updatedAtMs, serviceCallId };
}

/** The three fields after the version of a cursor of `version`, checked. */
function cursorFields(text: string, version: number): [number, number, string] | undefined {
  if (text.length === 0 || text.length > 2048 || !/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 4 || value[0] !== version) return undefined;
  const [, a, b, serviceCallId] = value as unknown[];
  if (!Number.isSafeInteger(a) || !Number.isSafeInteger(b) || !isServiceCallId(serviceCallId)) return undefined;
  return [a as number, b as number, serviceCallId];
}

export function decodeCursor(text: string): ListPosition | undefined {
  const fields = cursorFields(text, CURSOR_VERSION);
  if (fields === undefined) return undefined;
  const [snapshotMs, dueAtMs, serviceCallId] = fields;
  return { snapshotMs, dueAtMs, serviceCallId };
}
