import { describe, expect, it } from "vitest";
import { headers } from "@nats-io/transport-node";
import { traceFromHeaders } from "../../../src/adapters/tracing/nats-trace-headers.js";
import { eventHeaders, HeaderTracing } from "../../../src/adapters/tracing/header-tracing.js";

/** Reading W3C Trace Context from command headers (CONTRACT §13): invalid means ignored. */
const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN_ID = "00f067aa0ba902b7";

function read(traceparent: string | undefined, tracestate?: string) {
  const h = headers();
  if (traceparent !== undefined) h.set("traceparent", traceparent);
  if (tracestate !== undefined) h.set("tracestate", tracestate);
  return traceFromHeaders(() => h);
}

describe("traceparent of a command", () => {
  it("reads trace-id, span-id, flags and tracestate as sent", () => {
    expect(read(`00-${TRACE_ID}-${SPAN_ID}-01`, "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7")).toEqual({
      traceId: TRACE_ID,
      spanId: SPAN_ID,
      traceFlags: 1,
      traceState: "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7",
    });
    expect(read(`00-${TRACE_ID}-${SPAN_ID}-00`)).toMatchObject({ traceFlags: 0, traceState: null });
  });

  it.each([
    ["version ff", `ff-${TRACE_ID}-${SPAN_ID}-01`],
    ["all-zero trace-id", `00-${"0".repeat(32)}-${SPAN_ID}-01`],
    ["all-zero span-id", `00-${TRACE_ID}-${"0".repeat(16)}-01`],
    ["upper-case hex", `00-${TRACE_ID.toUpperCase()}-${SPAN_ID}-01`],
    ["extra fields on version 00", `00-${TRACE_ID}-${SPAN_ID}-01-extra`],
    ["short trace-id", `00-${TRACE_ID.slice(1)}-${SPAN_ID}-01`],
    ["long span-id", `00-${TRACE_ID}-${SPAN_ID}0-01`],
    ["one-digit flags", `00-${TRACE_ID}-${SPAN_ID}-1`],
    ["not hex", `00-${TRACE_ID.replace("4", "g")}-${SPAN_ID}-01`],
    ["empty", ""],
  ])("ignores %s", (_, traceparent) => {
    expect(read(traceparent)).toBeUndefined();
  });

  it("accepts a later version with extra fields, keeping the fields it knows", () => {
    expect(read(`cc-${TRACE_ID}-${SPAN_ID}-01-what-the-future-brings`)).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID });
  });

  it("ignores tracestate without a valid traceparent, and none at all", () => {
    expect(read(undefined, "congo=t61rcWkgMzE")).toBeUndefined();
    expect(traceFromHeaders(() => undefined)).toBeUndefined();
    expect(traceFromHeaders(() => headers())).toBeUndefined();
  });

  it("when the headers cannot be parsed, then the command has no trace of its own (never a failure)", () => {
    const unreadable = (): never => {
      throw new Error("malformed header block");
    };
    expect(traceFromHeaders(unreadable)).toBeUndefined();
  });

  it("when tracestate holds a character a header cannot carry (a bare CR or LF), then it is dropped and the trace kept", () => {
    const h = headers();
    h.set("traceparent", `00-${TRACE_ID}-${SPAN_ID}-01`);
    const carrier = {
      headers: {
        has: (k: string) => h.has(k) || k === "tracestate",
        get: (k: string) => (k === "tracestate" ? "a=b\nc" : h.get(k)),
        keys: () => [...h.keys(), "tracestate"],
      },
    };
    expect(traceFromHeaders(() => carrier.headers as never)).toMatchObject({ traceId: TRACE_ID, traceState: null });
    expect(eventHeaders({ traceId: TRACE_ID, traceFlags: 1, traceState: "a=b\rc", spanId: null }, SPAN_ID)).toEqual({
      traceparent: `00-${TRACE_ID}-${SPAN_ID}-01`,
    });
  });

  it("drops a tracestate over the W3C limit of 512 characters", () => {
    expect(read(`00-${TRACE_ID}-${SPAN_ID}-01`, `a=${"b".repeat(600)}`)).toMatchObject({ traceState: null });
  });
});

describe("traceparent of an event", () => {
  it("has the timer's trace-id and flags, the given span-id, and tracestate copied", () => {
    const trace = { traceId: TRACE_ID, traceFlags: 0, traceState: "k=v", spanId: SPAN_ID };
    expect(eventHeaders(trace, "1111111111111111")).toEqual({ traceparent: `00-${TRACE_ID}-1111111111111111-00`, tracestate: "k=v" });
  });

  it("gets a fresh span-id of the service's own per event, and a new valid trace when the timer has none", async () => {
    const tracing = new HeaderTracing();
    const trace = { traceId: TRACE_ID, traceFlags: 1, traceState: null, spanId: SPAN_ID };
    const seen: string[] = [];
    for (let i = 0; i < 3; i++)
      await tracing.publishEvent(trace, { subject: "s", tenantId: "t" }, async (h) => void seen.push(h.traceparent));
    const spanIds = seen.map((h) => h.split("-")[2]);
    expect(new Set(spanIds).size).toBe(3);
    expect(spanIds).not.toContain(SPAN_ID);
    seen.forEach((h) => expect(read(h)).toMatchObject({ traceId: TRACE_ID, traceFlags: 1 }));
    let fresh = "";
    await tracing.publishEvent(undefined, { subject: "s", tenantId: "t" }, async (h) => void (fresh = h.traceparent));
    expect(read(fresh)?.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(read(fresh)?.traceId).not.toBe(TRACE_ID);
  });
});
