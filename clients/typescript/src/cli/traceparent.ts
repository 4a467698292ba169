import { UsageError } from "./usage-error.js";

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * `--traceparent`: a W3C Trace Context `traceparent` (version-traceid-parentid-flags, lowercase
 * hex). The service ignores an invalid one silently, so the CLI refuses it before anything is sent.
 */
export function traceparentFrom(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const match = TRACEPARENT.exec(value);
  const valid =
    match !== null &&
    match[1] !== "ff" &&
    // Version 00 has exactly four fields; later versions may append more.
    (match[1] !== "00" || match[5] === undefined) &&
    !/^0+$/.test(match[2]!) &&
    !/^0+$/.test(match[3]!);
  if (!valid) {
    throw new UsageError(
      `--traceparent "${value}" is not a W3C traceparent: version-traceid-parentid-flags in lowercase hex, ` +
        "like 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 (ids not all zero)",
    );
  }
  return value;
}
