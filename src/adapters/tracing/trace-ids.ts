import { randomFillSync } from "node:crypto";

/** Random bytes drawn in blocks: one system call for many ids when thousands of events go out at once. */
const pool = Buffer.alloc(4096);
let offset = pool.length;

function randomHex(bytes: number): string {
  for (;;) {
    if (offset + bytes > pool.length) {
      randomFillSync(pool);
      offset = 0;
    }
    const hex = pool.toString("hex", offset, offset + bytes);
    offset += bytes;
    // An all-zero id is invalid (W3C Trace Context); drawing it again is as likely as winning twice.
    if (!/^0+$/.test(hex)) return hex;
  }
}

export function randomTraceId(): string {
  return randomHex(16);
}

export function randomSpanId(): string {
  return randomHex(8);
}

/** A version-00 `traceparent` header. */
export function formatTraceparent(traceId: string, spanId: string, traceFlags: number): string {
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}
