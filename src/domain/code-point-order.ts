import type { TimerKey } from "./timer.js";

/**
 * Orders strings by code point: the order of SQLite's BINARY collation (memcmp of UTF-8) and of
 * Postgres' `COLLATE "C"`, so that every store lists, claims and locks in the same order.
 * JavaScript's `<` compares UTF-16 code units, which puts astral characters (surrogate pairs,
 * 0xD800–0xDFFF) before U+E000–U+FFFF; ranking the units at the first difference fixes that
 * without encoding either string.
 */
export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

function codePointRank(codeUnit: number): number {
  if (codeUnit >= 0xe000) return codeUnit - 0x800;
  if (codeUnit >= 0xd800) return codeUnit + 0x2000;
  return codeUnit;
}

/** Tenant first, then serviceCallIdPrefix, both by code point: the key order of prefix cancels. */
export function comparePrefixCancelKeys(
  a: { readonly tenantId: string; readonly serviceCallIdPrefix: string },
  b: { readonly tenantId: string; readonly serviceCallIdPrefix: string },
): number {
  return compareCodePoints(a.tenantId, b.tenantId) || compareCodePoints(a.serviceCallIdPrefix, b.serviceCallIdPrefix);
}

/** Tenant first, then serviceCallId, both by code point. */
export function compareTimerKeys(a: TimerKey, b: TimerKey): number {
  return compareCodePoints(a.tenantId, b.tenantId) || compareCodePoints(a.serviceCallId, b.serviceCallId);
}
